#pragma once
// What the top level still owes the MQS, and what it sends next. The unconfirmed window holds each
// at-least-once enqueue (numbered) until the MQS confirms or refuses it, and the at-most-once ones
// made while the link is down; both go again on the next connection. The outgoing batch gathers the
// records of one flush: enqueues, nacks, cancels and the like as they come, acks and pulls merged
// (one ack record for every tag, one pull per topic), all in one WebSocket message.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dde/names.hpp"
#include "dde/protocol/mqs_request.hpp"

namespace dde::host {

/// An enqueue the link has not got to the MQS for good yet.
struct pending_enqueue {
  std::string topic;
  std::string props;
  std::string body;
  std::function<void(bool)> settled;  ///< enqueue_then's: told when the MQS confirms or refuses it
};

class unconfirmed_window {
 public:
  /// At most this many at-most-once enqueues wait for a link; beyond, the oldest is dropped.
  static constexpr std::size_t max_backlog = 100000;

  /// Numbers an at-least-once enqueue and holds it until settle(); returns it with its number.
  std::pair<std::uint64_t, const pending_enqueue&> hold(pending_enqueue m);
  /// The MQS confirmed or refused enqueue `seq`: forgotten, its callback told; false if unknown.
  bool settle(std::uint64_t seq, bool confirmed);
  /// An at-most-once enqueue while the link is down; false when the oldest was dropped for it.
  bool keep(pending_enqueue m);
  /// Each unconfirmed enqueue, in number order (to send again on a new connection).
  void for_each_unconfirmed(const std::function<void(std::uint64_t, const pending_enqueue&)>& fn) const;
  /// The at-most-once enqueues kept, taken (to send on a new connection).
  std::deque<pending_enqueue> take_backlog();
  /// Stopping for good: what was never confirmed is given up.
  void give_up() { unconfirmed_.clear(); }

  std::size_t unconfirmed() const { return unconfirmed_.size(); }
  std::size_t backlog() const { return backlog_.size(); }

 private:
  std::uint64_t next_seq_ = 1;
  std::map<std::uint64_t, pending_enqueue> unconfirmed_;
  std::deque<pending_enqueue> backlog_;
};

class outgoing_batch {
 public:
  struct pull {
    delivery_mode mode = delivery_mode::at_least_once;
    std::size_t credit = 0;
    std::uint32_t consumers = 0;  ///< 0: not told
  };

  /// Records as they come (enqueues, nacks, cancels, pauses, depth questions, hello).
  std::string& records() { return out_; }
  void ack(std::uint64_t tag) { acks_.push_back(tag); }
  /// More credit for `topic` (added to what this batch asks already); `consumers` when told.
  void add_pull(const std::string& topic, delivery_mode mode, std::size_t credit,
                std::uint32_t consumers = 0);
  void drop_pull(const std::string& topic) { pulls_.erase(topic); }
  /// `topic`'s pulls ask for `count` partitions by body field `key` from now on (0: not partitioned).
  void partition(const std::string& topic, std::uint32_t count, const std::string& key);
  /// The batch so far, with its merged acks and pulls appended (`pulled(topic, credit)` hears each
  /// pull); empty afterwards.
  std::string take(const std::function<void(const std::string&, std::size_t)>& pulled);
  /// The connection it was for is gone: nothing of it is sent.
  void clear();

 private:
  std::string out_;
  std::vector<std::uint64_t> acks_;
  std::map<std::string, pull> pulls_;
  std::map<std::string, std::pair<std::uint32_t, std::string>>
      partitions_;  ///< partitioned topics: count, key
};

}  // namespace dde::host
