#pragma once
// The asks a pool's workers sent that are not answered yet: when each went out and which pool it
// asked, so that its round trip is known when the reply comes back (dde_host_ask_seconds{pool}), and
// an ask never answered ends as timed out (dde_host_ask_timeouts_total{pool}) instead of being kept
// for ever. A plain state machine: the router calls it on its strand with its clock's time.

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "clock.hpp"

namespace dde::host {

class ask_tracker {
 public:
  using time_point = clock::time_point;
  /// An ask that ended: the pool it asked (topic form, `system.isolate`) and how long it took.
  struct ended {
    std::string pool;
    double seconds = 0;
  };

  /// Asks unanswered for `timeout` time out; beyond `max_pending` at once, the oldest do.
  explicit ask_tracker(std::chrono::milliseconds timeout, std::size_t max_pending = 100000)
      : timeout_(timeout), max_pending_(max_pending) {}

  /// Ask `id` to `pool` went out at `at`. The same id again (the ask forwarded on) changes nothing.
  void sent(const std::string& id, const std::string& pool, time_point at);
  /// The reply to `id` arrived at `at`: the ask's pool and round trip, or nothing when `id` is no
  /// pending ask (a reply to a plain message, a second reply, or one after the timeout).
  std::optional<ended> answered(const std::string& id, time_point at);
  /// Forgets the asks timed out by `now` (and the oldest beyond `max_pending`): what they waited.
  std::vector<ended> expire(time_point now);
  /// When the oldest pending ask times out; nothing when none is pending.
  std::optional<time_point> next_deadline() const;
  std::size_t pending() const { return pending_.size(); }
  /// More asks pending than `max_pending`: expire() ends the oldest now.
  bool over_limit() const { return pending_.size() > max_pending_; }

 private:
  using by_time = std::multimap<time_point, std::string>;  ///< sent at -> id, oldest first
  struct entry {
    std::string pool;
    by_time::iterator at;
  };

  std::chrono::milliseconds timeout_;
  std::size_t max_pending_;
  std::unordered_map<std::string, entry> pending_;
  by_time order_;
};

}  // namespace dde::host
