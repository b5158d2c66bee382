#pragma once
// Where a pool is in its life: running; restarting every worker after an escalation; stopped by
// supervision (halted: a RESTART starts it again); or shutting down for good, waiting for the
// messages in flight to end (up to a timeout). Runs on the router's strand with the router's clock.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "clock.hpp"

namespace dde::host {

class pool_lifecycle {
 public:
  pool_lifecycle(host::clock& clock, const strand_type& strand, std::string pool);

  /// Shutting down or halted: no message starts, no operation is taken.
  bool stopping() const { return stopping_; }
  bool halted() const { return halted_; }
  /// Every worker is being replaced (supervision escalated to the pool).
  bool restarting() const { return restarting_; }
  /// "running", or why supervision stopped it (describe's poolState).
  const std::string& state() const { return state_; }
  /// The last failure of one of its workers (describe's lastError; "" = none).
  const std::string& last_error() const { return last_error_; }
  void failed(std::string what) { last_error_ = std::move(what); }

  /// Supervision stops the pool, `state` says why and `reason` is its verdict (stopped_text);
  /// false when it was stopping already.
  bool halt(std::string state, std::string reason);
  /// A RESTART starts the halted pool again.
  void revive();
  /// Supervision replaces every worker; false when that is under way already.
  bool begin_restart();
  void end_restart() { restarting_ = false; }

  /// Shuts the pool down: `drained` runs once, when drained_if(0) says nothing is in flight or when
  /// `timeout` passed (`timed_out`), whichever comes first.
  void shut_down(std::chrono::milliseconds timeout, std::function<void(bool timed_out)> drained);
  /// Shutting down with `in_flight` messages left: none, and the shutdown goes on.
  void drained_if(std::size_t in_flight);

  /// Why an operation is refused while stopping, and what to do (`restart_hint`: how to RESTART it).
  std::string stopped_text(const std::string& restart_hint) const;

 private:
  void drained(bool timed_out);

  host::clock& clock_;
  strand_type strand_;
  std::string pool_;
  std::string state_ = "running";
  std::string reason_;  ///< supervision's verdict, while halted
  std::string last_error_;
  bool restarting_ = false;
  bool stopping_ = false;
  bool halted_ = false;
  std::function<void(bool)> drained_;  ///< the shutdown waiting for in-flight messages
  std::unique_ptr<timer> timer_;       ///< the shutdown's timeout
};

}  // namespace dde::host
