#pragma once
// Supervision (Erlang/Akka): what a pool does when a worker's on_receive throws, by the pool's
// strategy, and when it has failed too often to go on. Plain logic over explicit time points: the
// router applies the decision; unit-tested directly.

#include <chrono>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>

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
  /// Why it stopped, without the failure: "stopped: N restarts within M ms".
  std::string stop_reason() const;
  /// Restarts counted in the window as of the last failure.
  std::size_t recent() const { return restarts_.size(); }

 private:
  supervision_spec spec_;
  std::deque<time_point> restarts_;
};

/// Poison messages: how often each message (by id) made a worker fail, in an at-least-once pool that
/// gives failed messages back to the queue. A message that failed `limit` times is not handed out
/// again when it comes back: the router dead-letters it with its last failure, and the pool goes on.
/// Counts are this instance's: another replica counts its own, and the queue's delivery limit is the
/// backstop across replicas. At most `capacity` messages are remembered (the oldest are forgotten).
class poison_filter {
 public:
  explicit poison_filter(int limit, std::size_t capacity = 10000) : limit_(limit), capacity_(capacity) {}
  bool enabled() const { return limit_ > 0; }
  int limit() const { return limit_; }
  /// Message `id` made a worker fail with `what`.
  void failed(const std::string& id, const std::string& what);
  struct verdict {
    int failures;
    std::string last_failure;
  };
  /// A message came back: its failures and the last one when they reached the limit (it is
  /// forgotten then), else nothing.
  std::optional<verdict> poisoned(const std::string& id);
  /// The message was done: its failures are forgotten.
  void done(const std::string& id) {
    if (!by_id_.empty()) by_id_.erase(id);
  }
  std::size_t size() const { return by_id_.size(); }

 private:
  struct entry {
    int failures = 0;
    std::string last_failure;
  };
  int limit_;
  std::size_t capacity_;
  std::unordered_map<std::string, entry> by_id_;
  std::deque<std::string> order_;  ///< ids in the order of their first failure (some forgotten since)
};

}  // namespace dde::host
