#pragma once
/// \file
/// Reconnecting with backoff, as every client link does (host -> MQS, host -> activator,
/// proxy -> isolate deployer, bootstrapper -> registry): a timer on the owner's strand and a delay
/// that doubles after each failure, from `initial` up to `max`, back to `initial` on success.

#include <algorithm>
#include <chrono>
#include <functional>

#include <boost/asio/steady_timer.hpp>

namespace dde::net {

class retry_timer {
 public:
  template <class Executor>
  retry_timer(const Executor& ex, std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : timer_(ex), initial_(initial), max_(max), delay_(initial) {}

  /// The delay the next `schedule` waits.
  std::chrono::milliseconds delay() const { return delay_; }
  /// Runs `fn` (on the timer's executor) after `delay()`, unless cancelled; then the delay doubles
  /// when `grow` (a caller trying alternatives in turn grows it once per round).
  void schedule(std::function<void()> fn, bool grow = true) {
    timer_.expires_after(delay_);
    if (grow) delay_ = std::min(delay_ * 2, max_);
    timer_.async_wait([fn = std::move(fn)](boost::system::error_code ec) {
      if (!ec) fn();
    });
  }
  /// The link is up: the next failure waits `initial` again.
  void reset() { delay_ = initial_; }
  void cancel() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
  std::chrono::milliseconds initial_, max_, delay_;
};

}  // namespace dde::net
