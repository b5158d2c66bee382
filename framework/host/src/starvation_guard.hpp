#pragma once
// The starvation guard (thesis 3.2.1): a worker that holds messages and has been quiet for
// `ping_after` gets a PING; no PONG within `pong_timeout` means its thread is stuck in the plugin and
// it is replaced; a PONG while the message it holds has not been done() for `ping_after` is a failure
// for supervision. Plain logic over explicit time points: the router sends the PINGs and acts on the
// verdicts; unit-tested directly.

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

namespace dde::host {

class starvation_guard {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  starvation_guard(std::chrono::milliseconds ping_after, std::chrono::milliseconds pong_timeout)
      : ping_after_(ping_after), pong_timeout_(pong_timeout) {}

  bool enabled() const { return ping_after_.count() > 0; }
  /// How often to scan.
  std::chrono::milliseconds period() const;
  /// Slots 0..n-1 (new ones active at `now`).
  void resize(std::size_t n, time_point now);
  /// The slot did something (got its first message, finished one, was retried): quiet from `now`.
  void active(std::size_t slot, time_point now);
  /// Whether a PING awaits its PONG.
  bool pinging() const {
    for (auto p : ping_out_)
      if (p != 0) return true;
    return false;
  }
  /// The slot's instance was replaced or killed: its PING awaits nothing any more.
  void forget(std::size_t slot);
  /// A fresh instance in the slot at `now`: no PING awaited, quiet from now.
  void renew(std::size_t slot, time_point now) {
    forget(slot);
    active(slot, now);
  }

  struct action {
    enum class kind { ping, replace };
    kind what;
    std::size_t slot;
    std::uint64_t ping_id = 0;  ///< for `ping`: the PING's number, which its PONG brings back
  };
  /// What to do at `now`; `holding(slot)`: the slot is alive and holds messages (only those are watched).
  std::vector<action> scan(time_point now, const std::function<bool(std::size_t)>& holding);

  enum class verdict {
    stale,     ///< not the PING awaited (late, or the slot was replaced): nothing to do
    answered,  ///< the worker is alive: pull again, in case a pull went astray
    too_slow   ///< alive, but its message has not been done() for too long: fail it
  };
  verdict on_pong(std::size_t slot, std::uint64_t ping, bool busy, std::chrono::milliseconds busy_for,
                  time_point now);
  std::chrono::milliseconds ping_after() const { return ping_after_; }

 private:
  std::chrono::milliseconds ping_after_, pong_timeout_;
  std::vector<time_point> last_activity_;
  std::vector<std::uint64_t> ping_out_;  ///< per slot: the PING awaiting its PONG (0: none)
  std::uint64_t next_ping_ = 1;
};

}  // namespace dde::host
