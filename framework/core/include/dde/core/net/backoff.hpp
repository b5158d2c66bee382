#pragma once
/// \file
/// Reconnect delays, for every link that retries (host -> MQS, host -> activator, proxy -> Isolate
/// Deployer, bootstrapper -> registry, the MQS's broker connections): the delay doubles after each
/// failure, from `initial` up to `max`, and goes back to `initial` once the link is up. Each delay is
/// jittered down by up to `jitter` of itself, so clients that lost one peer together do not all come
/// back in the same millisecond (AWS's "equal jitter" with a configurable share). Plain logic: no
/// timer, no clock; the retry_timer and the MQS's reconnect loops wait for what it says.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace dde::net {

/// The data path's reconnect delays (the MQS's broker connections, a host's link to its MQS): 100 ms
/// doubling to 500 ms, so a broker or MQS that comes back is found within half a second (the recovery
/// target: consuming resumes within 1 s of the peer accepting connections; `dde-bench-suite --only 8`).
/// A refused connect costs next to nothing, so a short cap costs nothing while the peer is down.
inline constexpr std::chrono::milliseconds data_path_retry_initial{100};
inline constexpr std::chrono::milliseconds data_path_retry_max{500};

class backoff {
 public:
  backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max, double jitter = 0.2,
          std::uint32_t seed = std::random_device{}())
      : initial_(initial),
        max_(std::max(max, initial)),
        jitter_(std::clamp(jitter, 0.0, 1.0)),
        next_(initial_),
        rng_(seed) {}

  /// The delay to wait before the next attempt; the one after it doubles (up to max).
  std::chrono::milliseconds next() {
    auto base = next_;
    next_ = std::min(next_ * 2, max_);
    if (jitter_ <= 0 || base.count() <= 1) return base;
    auto cut = std::uniform_real_distribution<double>(0, jitter_)(rng_);
    return std::chrono::milliseconds(base.count() - static_cast<long long>(double(base.count()) * cut));
  }
  /// The un-jittered delay next() starts from.
  std::chrono::milliseconds peek() const { return next_; }
  /// The link is up: the next failure waits `initial` again.
  void reset() { next_ = initial_; }

 private:
  std::chrono::milliseconds initial_, max_;
  double jitter_;
  std::chrono::milliseconds next_;
  std::minstd_rand rng_;  ///< jitter needs no more (mt19937 would be 5 KB per MQS topic consumer)
};

}  // namespace dde::net
