#pragma once
// The dequeuer's broker channels, by epoch (a number given to each consumer it starts, never
// reused, so a frame or an ack of a channel gone is told from one of its successor's): each
// channel's consumers, its acks waiting to be sent, and the delivery being read on it.

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ack_batcher.hpp"
#include "broker_link.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dispatcher.hpp"
#include "partitions.hpp"

namespace dde::mqs {

struct channel_state {
  channel_state(std::string t, std::uint64_t e, std::string tag, broker_link& l, std::uint16_t ch,
                ack_batcher::clock::duration ack_hold = {})
      : topic(std::move(t)),
        epoch(e),
        consumer_tag(std::move(tag)),
        link(&l),
        channel(ch),
        acks(ch, ack_hold) {}
  std::string topic;
  std::uint64_t epoch = 0;
  std::string consumer_tag;            ///< of the first consumer; the others' are "<it>+<n>"
  std::vector<std::string> more_tags;  ///< the other consumers on the channel, one per extra host
  std::uint32_t next_more = 1;
  /// When the last delivery arrived or the last ack or reject was settled (it makes room for
  /// more): extra consumers are cancelled only once the channel is quiet both ways.
  std::chrono::steady_clock::time_point last_traffic{};
  broker_link* link;  ///< the connection it lives on (its consumer's, or the main one)
  std::uint16_t channel;
  ack_batcher acks;
  bool governance = false;   ///< the pause consumer (no-ack), not a topic's
  partitioning partitioned;  ///< a partitioned topic's partitions and key (count 0: not partitioned)
  bool lease_copy = false;   ///< the delivery being read came from the lease queue
  bool oversize = false;     ///< a governance message too large to read: skipped
  // The delivery being read: method, then content header, then body frames.
  bool reading = false;
  broker_ref ref;
  bool redelivered = false;
  std::uint32_t consumer = 0;  ///< its consumer's number on the channel: a partitioned topic's partition
  std::uint64_t remaining = 0;
  std::string body;
  message_props props;
};

class channel_table {
 public:
  using clock = std::chrono::steady_clock;

  /// A fresh epoch, for the next consumer started.
  std::uint64_t next_epoch() { return next_epoch_++; }
  /// The next channel number on the main connection, up to `max` (the broker's channel_max, 0: no
  /// limit). Numbers are not reused at once, so frames still queued for a closed channel cannot be
  /// taken for those of a new one (the consumer tag is checked as well).
  std::uint16_t next_channel(std::uint16_t max);

  template <class... Args>
  channel_state& add(std::uint64_t epoch, Args&&... args) {
    return channels_.try_emplace(epoch, std::forward<Args>(args)...).first->second;
  }
  /// The channel of `epoch` (0: none); nullptr when it is gone.
  channel_state* find(std::uint64_t epoch);
  void erase(std::uint64_t epoch);
  /// `epoch`'s channel has acks or rejects to send.
  void settled(std::uint64_t epoch) { dirty_.insert(epoch); }
  /// Sends the acks due (`all`: every held one too, the last turn) on each channel that has some;
  /// when the first ack still held must go (max(): none is).
  clock::time_point flush(clock::time_point now, bool all);

 private:
  std::unordered_map<std::uint64_t, channel_state> channels_;
  std::unordered_set<std::uint64_t> dirty_;  ///< epochs with acks to send
  std::uint64_t next_epoch_ = 1;
  std::uint16_t next_channel_ = 1;
};

}  // namespace dde::mqs
