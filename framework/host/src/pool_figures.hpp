#pragma once
// A pool's figures: the counters describe shows ("stats", and the governance counts), the messages
// its workers sent (counted on their strands), and the time a message waited in the queue and took
// to handle (dde_host_queue_seconds, dde_host_handling_seconds, describe's "latency").

#include <atomic>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "dde/core/metrics.hpp"

namespace dde::host {

struct pool_counts {
  std::uint64_t delivered = 0, done = 0, failed = 0, replies = 0, replies_dropped = 0, restarts = 0;
  // Deliveries the broker had delivered before; at-least-once messages acked after the work.
  std::uint64_t redelivered = 0, acked = 0;
  // Rate-limit governance: messages a worker backed off, retries, dead letters.
  std::uint64_t rate_limited = 0, retries = 0, dead_lettered = 0;
  // Delayed retry (`retry.delays`): failed messages put in a delay queue.
  std::uint64_t delayed = 0;
};

class pool_figures {
 public:
  /// Every per-pool series is there, at 0, from the pool's start: not only after its first message.
  explicit pool_figures(const std::string& pool);

  pool_counts& count() { return counts_; }
  const pool_counts& counts() const { return counts_; }
  /// A worker sent a message (from its strand).
  void sent() { sent_.fetch_add(1, std::memory_order_relaxed); }
  /// A message published at `published_us` (the MQS's wall clock, µs) was handed to a worker `now`.
  void queued(std::uint64_t published_us, std::chrono::system_clock::time_point now);
  /// A message was done this long after its hand-over.
  void handled(std::chrono::duration<double> took) { handling_.observe(took.count()); }

  /// describe's "stats".
  nlohmann::json stats() const;
  /// describe's "latency": p50, p90, p99 and count of each histogram that has seen a message.
  nlohmann::json latency() const;

 private:
  pool_counts counts_;
  std::atomic<std::uint64_t> sent_{0};
  metric_histogram& handling_;
  metric_histogram& queue_;
};

}  // namespace dde::host
