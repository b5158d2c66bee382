#pragma once
// Supervision (Erlang/Akka): what a pool does when a worker's on_receive throws, by the pool's
// strategy, and when it has failed too often to go on. Plain logic over explicit time points: the
// router applies the decision; unit-tested directly.

#include <chrono>
#include <deque>
#include <string>

#include "dde/protocol/pool_spec.hpp"

namespace dde::host {

class supervisor {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  explicit supervisor(supervision_spec spec) : spec_(spec) {}

  enum class action {
    resume,          ///< the worker goes on with its next message
    stop_worker,     ///< the worker stays down; the others go on
    restart_worker,  ///< a fresh instance of the worker, after `backoff`
    restart_pool,    ///< every worker gets a fresh instance (escalation)
    stop_pool        ///< too many restarts within the window: the pool stops
  };
  struct decision {
    action what;
    std::chrono::milliseconds backoff{0};
  };
  /// A worker threw at `now`. Restarts and escalations count against `max_restarts` within `within`;
  /// each waits `backoff` doubled per recent restart (at most 30 s).
  decision on_failure(time_point now);
  /// The pool's state once it stopped: why, with the last failure.
  std::string stopped_state(const std::string& last_failure) const;
  /// Restarts counted in the window as of the last failure.
  std::size_t recent() const { return restarts_.size(); }

 private:
  supervision_spec spec_;
  std::deque<time_point> restarts_;
};

}  // namespace dde::host
