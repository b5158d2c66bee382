#include "pool_figures.hpp"

#include <cmath>

namespace dde::host {

pool_figures::pool_figures(const std::string& pool)
    : handling_(metrics_registry::process().histogram(
          "dde_host_handling_seconds", "Time from a message's hand-over to a worker to its done(), per pool.",
          latency_buckets(), {{"pool", pool}})),
      queue_(metrics_registry::process().histogram(
          "dde_host_queue_seconds",
          "Time from a message's publishing by the MQS (its wall clock) to its hand-over to a worker (this "
          "host's wall clock), per pool.",
          latency_buckets(), {{"pool", pool}})) {}

void pool_figures::queued(std::uint64_t published_us, std::chrono::system_clock::time_point now) {
  // 0 when the clocks disagree so much that the stamp lies in the future.
  auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  queue_.observe(now_us > 0 && std::uint64_t(now_us) > published_us
                     ? double(std::uint64_t(now_us) - published_us) / 1e6
                     : 0.0);
}

nlohmann::json pool_figures::stats() const {
  return {{"delivered", counts_.delivered},
          {"done", counts_.done},
          {"failed", counts_.failed},
          {"restarts", counts_.restarts},
          {"replies", counts_.replies},
          {"repliesDropped", counts_.replies_dropped},
          {"redelivered", counts_.redelivered},
          {"acked", counts_.acked},
          {"sent", sent_.load(std::memory_order_relaxed)}};
}

nlohmann::json pool_figures::latency() const {
  // Percentiles since the pool started in this process, from its histograms (also in /metrics).
  nlohmann::json latency = nlohmann::json::object();
  auto percentiles = [&](const char* key, const metric_histogram& h) {
    if (!quantile(h, 0.5)) return;
    auto ms = [&](double q) { return std::round(*quantile(h, q) * 1e6) / 1e3; };
    latency[key] = {{"p50", ms(0.5)}, {"p90", ms(0.9)}, {"p99", ms(0.99)}, {"count", h.cumulative().back()}};
  };
  percentiles("handlingMs", handling_);
  percentiles("queueMs", queue_);
  return latency;
}

}  // namespace dde::host
