#pragma once
// Time as a router sees it: what time it is and timers that run a function later on the router's
// strand. The real clock is std::chrono::steady_clock with Asio timers; a test gives a manual clock
// that only moves when told (tests/unit/manual_clock.hpp), so starvation pings, plugin polls,
// autoscaling samples, tail-chopping and drain timeouts run when the test says, not when a loaded
// machine gets round to them.

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace dde::host {

using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

/// One pending call at a time: `after` replaces the one before, `cancel` drops it. `fn` runs on the
/// strand the timer was made for, never after cancel() or a newer after().
class timer {
 public:
  virtual ~timer() = default;
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  virtual void cancel() = 0;
};

class clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~clock() = default;
  virtual time_point now() const = 0;
  /// The wall clock: compared with a publish stamp another process (or machine) took on its own.
  virtual std::chrono::system_clock::time_point wall_now() const { return std::chrono::system_clock::now(); }
  virtual std::unique_ptr<timer> make_timer(const strand_type& strand) = 0;
};

/// std::chrono::steady_clock and boost::asio::steady_timer.
std::shared_ptr<clock> real_clock();

}  // namespace dde::host
