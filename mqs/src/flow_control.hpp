#pragma once
/// \file
/// Backpressure between the hosts and the enqueuer: counts what was accepted and is not yet
/// published (or confirmed); above the limit the connections that enqueue stop being read, and
/// they are read again once the backlog is below half of it. Thread-safe.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "dde/net/ws.hpp"

namespace dde::mqs {

class flow_control {
 public:
  flow_control(std::size_t max_messages, std::size_t max_bytes)
      : max_messages_(max_messages), max_bytes_(max_bytes) {}

  void add(std::size_t messages, std::size_t bytes);
  /// Resumes paused connections when the backlog fell below the low watermark.
  void remove(std::size_t messages, std::size_t bytes);
  bool full() const;
  /// Pauses reading from `conn` if the backlog is full.
  void pause_if_full(const std::shared_ptr<net::ws_connection>& conn);
  void forget(std::uint64_t conn_id);
  /// Calls `fn` (on the thread whose remove() emptied it) each time the backlog empties after it
  /// held at least `messages` messages since the last call: the end of a burst, when the memory that
  /// carried it can go back to the system. Set before any add().
  void on_drained(std::size_t messages, std::function<void()> fn) {
    burst_messages_ = messages;
    drained_ = std::move(fn);
  }

  std::size_t messages() const { return messages_.load(); }
  std::size_t bytes() const { return bytes_.load(); }

 private:
  bool low() const { return messages_.load() <= max_messages_ / 2 && bytes_.load() <= max_bytes_ / 2; }

  const std::size_t max_messages_, max_bytes_;
  std::atomic<std::size_t> messages_{0}, bytes_{0};
  std::atomic<bool> any_paused_{false};
  std::size_t burst_messages_ = 0;
  std::function<void()> drained_;
  std::atomic<bool> burst_{false};  ///< the backlog held burst_messages_ since drained_ was last called
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<net::ws_connection>> paused_;
  std::chrono::steady_clock::time_point last_warning_{};
};

}  // namespace dde::mqs
