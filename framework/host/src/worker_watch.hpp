#pragma once
// The starvation guard at work in a router (thesis 3.2.1): every period it scans the pool's slots,
// PINGs a worker that holds messages and went quiet, replaces one whose PONG does not come, and fails
// the message of one that answers but has not finished it. Owns the guard's bookkeeping
// (starvation_guard), its timer, and whether it sleeps: with nothing held and no PING out, the timer
// waits for the next hand-over, so an idle pool costs no timer (thousands of pools on a node).

#include <chrono>
#include <functional>
#include <memory>

#include "clock.hpp"
#include "starvation_guard.hpp"

namespace dde::host {

/// What the watch needs of its pool.
class watched_pool {
 public:
  virtual ~watched_pool() = default;
  /// The slot is alive and holds messages (only those are watched).
  virtual bool holding(std::size_t slot) const = 0;
  /// Sends the slot's worker a PING; `pong` must run later on the router's strand.
  virtual void ping(std::size_t slot,
                    std::function<void(bool busy, std::chrono::milliseconds busy_for)> pong) = 0;
  /// No PONG in time: the worker's thread is stuck in the plugin.
  virtual void replace_stuck(std::size_t slot) = 0;
  /// A PONG, but the message it holds has not been done() for too long: a failure, for supervision.
  virtual void fail_current(std::size_t slot, std::string why) = 0;
  /// A PONG: the worker is alive; pull again, in case a pull went astray.
  virtual void answered() = 0;
  virtual std::size_t slot_count() const = 0;
};

class worker_watch {
 public:
  worker_watch(host::clock& clock, const strand_type& strand, std::chrono::milliseconds ping_after,
               std::chrono::milliseconds pong_timeout, watched_pool& pool);

  bool enabled() const { return guard_.enabled(); }
  /// Scans from now on (again after stop()); nothing when the pool has no guard.
  void start();
  void stop();

  /// Slots 0..n-1, each quiet from now.
  void resize(std::size_t n) { guard_.resize(n, clock_.now()); }
  /// A fresh instance in `slot`: no PING awaited, quiet from now.
  void renew(std::size_t slot) { guard_.renew(slot, clock_.now()); }
  /// The slot's instance is gone: its PING awaits nothing any more.
  void forget(std::size_t slot) { guard_.forget(slot); }
  /// The slot did something (finished a message, was retried): quiet from now.
  void active(std::size_t slot) { guard_.active(slot, clock_.now()); }
  /// A message went to `slot`; `first`: the only one it holds now (its quiet starts now). Wakes a
  /// sleeping watch.
  void handed(std::size_t slot, bool first) {
    if (first) active(slot);
    if (asleep_) {
      asleep_ = false;
      arm();
    }
  }

 private:
  void arm();
  void scan();
  void on_pong(std::size_t slot, std::uint64_t ping, bool busy, std::chrono::milliseconds busy_for);

  host::clock& clock_;
  strand_type strand_;
  watched_pool& pool_;
  starvation_guard guard_;
  std::unique_ptr<timer> timer_;
  bool running_ = false;
  bool asleep_ = false;  ///< nothing held, no PING out: the timer waits for the next hand-over
};

}  // namespace dde::host
