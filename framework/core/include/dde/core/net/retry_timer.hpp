#pragma once
/// \file
/// Reconnecting with backoff, as every client link does (host -> MQS, host -> activator,
/// proxy -> isolate deployer, bootstrapper -> registry): a timer on the owner's strand waiting what
/// net::backoff says (doubling from `initial` up to `max`, jittered, back to `initial` on success).

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

#include "dde/core/net/backoff.hpp"

namespace dde::net {

class retry_timer {
 public:
  template <class Executor>
  retry_timer(const Executor& ex, std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : timer_(ex), backoff_(initial, max) {}

  /// Runs `fn` (on the timer's executor) after the backoff's next delay, unless cancelled; returns that
  /// delay. With `grow` false (a caller trying alternatives in turn grows it once per round) the delay
  /// stays for the next call.
  std::chrono::milliseconds schedule(std::function<void()> fn, bool grow = true) {
    auto delay = grow ? backoff_.next() : backoff_.peek();
    timer_.expires_after(delay);
    timer_.async_wait([fn = std::move(fn)](boost::system::error_code ec) {
      if (!ec) fn();
    });
    return delay;
  }
  /// The link is up: the next failure waits `initial` again.
  void reset() { backoff_.reset(); }
  void cancel() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
  net::backoff backoff_;
};

}  // namespace dde::net
