#pragma once
/// \file
/// Counters and gauges of one process, rendered in the Prometheus text format (version 0.0.4) by
/// every daemon's `GET /metrics`. Thread-safe: broker threads, Asio threads and the HTTP handler
/// share one `metrics_registry`.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dde {

/// Label names and values of one series, e.g. {{"topic", "sys.pool"}}.
using metric_labels = std::vector<std::pair<std::string, std::string>>;

/// A counter or gauge cell: stable for the registry's lifetime, so hot paths may keep a reference.
class metric_cell {
 public:
  void add(double delta = 1) {
    auto v = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(v, v + delta, std::memory_order_relaxed)) {
    }
  }
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

/// A histogram: how many observations fell at or below each bound, their sum and count. Lock-free;
/// stable for the registry's lifetime, so a hot path may keep a reference.
class metric_histogram {
 public:
  explicit metric_histogram(std::vector<double> bounds);
  void observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  /// Cumulative counts per bound, then the +Inf bucket (= count).
  std::vector<std::uint64_t> cumulative() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  ///< per bound, then above the last
  std::atomic<double> sum_{0};
};

/// Bounds in seconds from 100 µs to 60 s, for latencies (handling time, round trips).
const std::vector<double>& latency_buckets();

/// The `q`-quantile (0..1) of what `h` observed, interpolated linearly inside its bucket as
/// Prometheus's histogram_quantile does (above the last bound: that bound); nullopt before any
/// observation.
std::optional<double> quantile(const metric_histogram& h, double q);

class metrics_registry {
 public:
  enum class kind { counter, gauge, histogram };

  /// The cell of `name` with `labels`, created at 0. A family's type and help come from its first use.
  metric_cell& counter(const std::string& name, const std::string& help, const metric_labels& labels = {});
  metric_cell& gauge(const std::string& name, const std::string& help, const metric_labels& labels = {});
  metric_histogram& histogram(const std::string& name, const std::string& help,
                              const std::vector<double>& bounds, const metric_labels& labels = {});
  /// Forgets every series of gauge `name` (before setting a fresh set of them, e.g. per pool).
  void clear(const std::string& name);
  /// Runs `fn` at the start of every `render`, to refresh gauges that are read, not counted.
  void on_render(std::function<void(metrics_registry&)> fn);

  /// Every family, `# HELP` and `# TYPE` first, series sorted by labels.
  std::string render();

  /// The registry of this process.
  static metrics_registry& process();

 private:
  struct family {
    kind type = kind::counter;
    std::string help;
    std::map<std::string, std::unique_ptr<metric_cell>> series;           ///< by rendered label set
    std::map<std::string, std::unique_ptr<metric_histogram>> histograms;  ///< by rendered label set
  };
  /// Family `name`, created with `type` and `help` on its first use (under the lock).
  family& family_of(const std::string& name, kind type, const std::string& help);
  metric_cell& cell(const std::string& name, kind type, const std::string& help, const metric_labels& labels);

  std::mutex mutex_;
  std::map<std::string, family> families_;
  std::vector<std::function<void(metrics_registry&)>> refreshers_;
};

/// The resident set size of this process in bytes (from /proc/self/statm), 0 if unknown.
std::uint64_t resident_memory_bytes();

/// Sets the standard process_* gauges and counters (CPU seconds, resident and virtual memory, open
/// and maximum file descriptors, start time) from /proc, and dde_build_info{version} = 1.
void add_process_metrics(metrics_registry& registry);

/// Escapes a label value for the text format (backslash, double quote, newline).
std::string escape_label_value(const std::string& value);

}  // namespace dde
