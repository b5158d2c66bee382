#pragma once
// The messages a router holds because no worker has room for them yet: its queue (a message goes back
// to its front when no worker could take it), and per sub-pool key those waiting for a message of
// their key to finish. Held messages use the pool's room, so the router never asks the MQS for more
// than it can hold. Owns the sub-pools' in-flight counts (sub_pool_ledger) too. Plain logic on the
// router's strand; unit-tested directly.

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "routing.hpp"
#include "runtime.hpp"

namespace dde::host {

/// A delivery the router holds: the broker's handle on it and the message.
struct held_message {
  std::uint64_t generation = 0;
  std::uint64_t tag = 0;
  std::uint64_t published_us = 0;  ///< the MQS's publish stamp (0: none), for the time-in-queue histogram
  message msg;
  int earlier_failures = 0;  ///< its envelope's `attempt` (delayed retry)
};

class held_messages {
 public:
  explicit held_messages(sub_pool_spec spec) : subs_(std::move(spec)) {}

  // Sub-pools (`subPools`: at most `capacity` messages of one key at a time).
  bool sub_pools() const { return subs_.enabled(); }
  std::string sub_key(const message& m) const { return subs_.key_of(m); }
  /// When `key`'s sub-pool is full, `w` waits (moved from) for one of its key to finish: true.
  bool wait_for_sub_pool(const std::string& key, held_message& w);
  void sub_pool_started(const std::string& key) { subs_.start(key); }
  /// A message of `key` ended: the oldest one waiting for its sub-pool goes to the front of the queue.
  void sub_pool_finished(const std::string& key);
  /// Messages waiting for room in their sub-pool.
  std::size_t sub_held() const { return sub_held_; }

  // The router's queue.
  bool empty() const { return queue_.empty(); }
  void push(held_message&& w, bool front = false) {
    if (front)
      queue_.push_front(std::move(w));
    else
      queue_.push_back(std::move(w));
  }
  held_message pop() {
    auto w = std::move(queue_.front());
    queue_.pop_front();
    return w;
  }
  /// Hands every held message to `fn` (to give it back to the broker); none is held after.
  template <class F>
  void give_back(F&& fn) {
    for (auto& w : queue_) fn(w);
    queue_.clear();
    for (auto& [key, held] : by_key_)
      for (auto& w : held) fn(w);
    by_key_.clear();
    sub_held_ = 0;
  }

  /// subPoolState: per key its in-flight, held and capacity, for the keys with a capacity, with
  /// messages waiting, or in `in_flight_keys`.
  nlohmann::json describe(const std::vector<std::string>& in_flight_keys) const;

 private:
  sub_pool_ledger subs_;
  std::deque<held_message> queue_;
  std::map<std::string, std::deque<held_message>> by_key_;  ///< per key: waiting for room in its sub-pool
  std::size_t sub_held_ = 0;
};

}  // namespace dde::host
