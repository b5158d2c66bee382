#pragma once
// A pool's throttle: at most `messages` starts in every window of `per` (a sliding log of the last
// starts, so the bound holds wherever the window is placed, not per timer tick) and at most
// `max_in_flight` messages being handled at once. Shared by a pool's worker cells, which ask it
// right before they hand a message to the worker; nothing runs while no message waits. A pool-wide
// pause (rate-limit governance) holds every start until it ends.

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace dde::runtime {

class rate_gate {
 public:
  using clock = std::chrono::steady_clock;

  /// `messages` 0 = no rate; `max_in_flight` 0 = no limit.
  rate_gate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight);

  struct verdict {
    bool allowed = true;
    /// When refused by the rate: the earliest time a start can be allowed. Refused by the in-flight
    /// limit: empty; `on_room` runs when a message finishes.
    std::optional<clock::time_point> retry_at;
  };
  /// Takes a start at `now` if both limits allow; otherwise says when to ask again.
  verdict try_start(clock::time_point now, const std::function<void()>& on_room = {});
  /// A started message finished: frees its in-flight place (and wakes one waiter).
  void finished();
  /// Governance: no start before `until` (a later pause extends it, an earlier one changes nothing).
  /// Returns whether it extended the pause.
  bool pause_until(clock::time_point until);
  clock::time_point paused_until() const;
  /// Changes the limits at run time.
  void set(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight);

 private:
  mutable std::mutex mutex_;
  clock::time_point paused_until_{};
  std::size_t messages_;
  clock::duration per_;
  std::size_t max_in_flight_;
  std::size_t in_flight_ = 0;
  std::deque<clock::time_point> starts_;  ///< the last `messages_` starts
  std::vector<std::function<void()>> waiting_;
};

}  // namespace dde::runtime
