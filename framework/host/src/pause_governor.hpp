#pragma once
// Rate-limit governance of one pool: a worker that was rate limited pauses the whole pool, here and
// (through the MQS) in every replica. This decides which pauses are announced (one per extension,
// however many workers were hit), recognises our own announcement coming back, and counts them.
// Plain logic over explicit time points: the router applies the pause to its rate gate and sends
// the announcement; unit-tested directly.

#include <chrono>
#include <cstdint>
#include <string>

namespace dde::host {

class pause_governor {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  /// A pause until `until` (`own`: a worker of this pool was hit; else a replica said so). True when
  /// it extends what was announced (by more than 5 ms): log it and, when `own`, tell the replicas.
  bool extend(time_point until, const std::string& reason, bool own);
  /// Whether a pause that came through the MQS from `origin` (`<mqs id>/<instance>`) is our own.
  static bool is_own(const std::string& origin, const std::string& instance);

  const std::string& reason() const { return reason_; }
  std::uint64_t pauses() const { return pauses_; }
  std::uint64_t remote_pauses() const { return remote_pauses_; }

 private:
  time_point announced_until_{};
  std::string reason_;
  std::uint64_t pauses_ = 0, remote_pauses_ = 0;
};

}  // namespace dde::host
