#pragma once
// What the enqueuer has to publish, in the order it goes: at-least-once messages (published on the
// confirming channel, within the confirm window), the rest (at-most-once and reply), and the
// at-least-once messages the broker nacked, each waiting for its retry time. A retry that falls due
// goes before what waits, and retries keep the order they were nacked in: a host's seqs stay in order.

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "outgoing_message.hpp"

namespace dde::mqs {

class publish_queues {
 public:
  using clock = std::chrono::steady_clock;

  /// Queues a host's message by its mode.
  void add(outgoing_message&& m);
  /// The at-least-once messages waiting, and the others.
  std::deque<outgoing_message>& confirmed() { return confirmed_; }
  std::deque<outgoing_message>& transient() { return transient_; }
  /// Takes the first message of `mode`'s queue out.
  outgoing_message take_front(delivery_mode mode);
  /// Puts messages (in publish order) back before everything waiting: a lost connection's unconfirmed.
  void put_back(std::vector<outgoing_message>&& again);
  /// Messages the broker nacked, in the order they were first published, go out again at `at`.
  void retry_at(std::vector<outgoing_message>&& nacked, clock::time_point at);
  /// Moves the retries due at `now` before what waits.
  void take_due_retries(clock::time_point now);
  /// When the first retry falls due, if any waits.
  std::optional<clock::time_point> next_retry() const;
  /// Something can be published now, with `unconfirmed` of at most `window` waiting for confirms.
  bool ready(std::size_t unconfirmed, std::size_t window) const {
    return !transient_.empty() || (!confirmed_.empty() && unconfirmed < window);
  }
  /// Messages waiting, retries included.
  std::size_t size() const { return confirmed_.size() + transient_.size() + retry_.size(); }
  bool empty() const { return size() == 0; }

 private:
  std::deque<outgoing_message> confirmed_;
  std::deque<outgoing_message> transient_;
  std::deque<std::pair<clock::time_point, outgoing_message>> retry_;
};

}  // namespace dde::mqs
