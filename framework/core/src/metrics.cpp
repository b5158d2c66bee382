#include "dde/core/metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "dde/core/command_line.hpp"

namespace dde {
namespace {

std::string render_labels(const metric_labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].first + "=\"" + escape_label_value(labels[i].second) + '"';
  }
  return out + '}';
}

std::string render_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// A bucket's bound as people write it ("0.1", not "0.10000000000000001").
std::string render_bound(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

}  // namespace

metric_histogram::metric_histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<std::uint64_t>[bounds_.size() + 1]) {
  std::sort(bounds_.begin(), bounds_.end());
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void metric_histogram::observe(double value) {
  auto at = std::size_t(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  buckets_[at].fetch_add(1, std::memory_order_relaxed);
  auto sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
}

std::vector<std::uint64_t> metric_histogram::cumulative() const {
  std::vector<std::uint64_t> out(bounds_.size() + 1);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i)
    out[i] = total += buckets_[i].load(std::memory_order_relaxed);
  return out;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                             0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
  return bounds;
}

std::optional<double> quantile(const metric_histogram& h, double q) {
  auto cum = h.cumulative();
  const auto& bounds = h.bounds();
  if (cum.empty() || cum.back() == 0) return std::nullopt;
  double rank = std::clamp(q, 0.0, 1.0) * double(cum.back());
  for (std::size_t i = 0; i < cum.size(); ++i) {
    if (double(cum[i]) < rank || cum[i] == 0) continue;
    if (i >= bounds.size()) return bounds.empty() ? 0.0 : bounds.back();
    double lower = i == 0 ? 0.0 : bounds[i - 1], upper = bounds[i];
    double below = i == 0 ? 0.0 : double(cum[i - 1]);
    double in_bucket = double(cum[i]) - below;
    return lower + (upper - lower) * (in_bucket > 0 ? (rank - below) / in_bucket : 1.0);
  }
  return bounds.empty() ? 0.0 : bounds.back();
}

std::string escape_label_value(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

metrics_registry::family& metrics_registry::family_of(const std::string& name, kind type,
                                                      const std::string& help) {
  auto& f = families_[name];
  if (f.series.empty() && f.histograms.empty() && f.help.empty()) {
    f.type = type;
    f.help = help;
  }
  return f;
}

metric_cell& metrics_registry::cell(const std::string& name, kind type, const std::string& help,
                                    const metric_labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family_of(name, type, help).series[render_labels(labels)];
  if (!slot) slot = std::make_unique<metric_cell>();
  return *slot;
}

metric_cell& metrics_registry::counter(const std::string& name, const std::string& help,
                                       const metric_labels& labels) {
  return cell(name, kind::counter, help, labels);
}

metric_cell& metrics_registry::gauge(const std::string& name, const std::string& help,
                                     const metric_labels& labels) {
  return cell(name, kind::gauge, help, labels);
}

metric_histogram& metrics_registry::histogram(const std::string& name, const std::string& help,
                                              const std::vector<double>& bounds,
                                              const metric_labels& labels) {
  std::lock_guard lock(mutex_);
  auto& slot = family_of(name, kind::histogram, help).histograms[render_labels(labels)];
  if (!slot) slot = std::make_unique<metric_histogram>(bounds);
  return *slot;
}

void metrics_registry::clear(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (auto it = families_.find(name); it != families_.end()) it->second.series.clear();
}

void metrics_registry::on_render(std::function<void(metrics_registry&)> fn) {
  std::lock_guard lock(mutex_);
  refreshers_.push_back(std::move(fn));
}

std::string metrics_registry::render() {
  std::vector<std::function<void(metrics_registry&)>> refreshers;
  {
    std::lock_guard lock(mutex_);
    refreshers = refreshers_;
  }
  for (auto& fn : refreshers) fn(*this);
  std::lock_guard lock(mutex_);
  std::string out;
  for (auto& [name, f] : families_) {
    if (f.series.empty() && f.histograms.empty()) continue;
    out += "# HELP " + name + ' ' + f.help + '\n';
    out += "# TYPE " + name +
           (f.type == kind::counter ? " counter\n"
            : f.type == kind::gauge ? " gauge\n"
                                    : " histogram\n");
    for (auto& [labels, c] : f.series) out += name + labels + ' ' + render_value(c->value()) + '\n';
    for (auto& [rendered, h] : f.histograms) {
      const std::string& labels = rendered;  // a lambda may not capture a structured binding (clang 14)
      // {pool="x"} becomes {pool="x",le="0.5"}; no labels, {le="0.5"}.
      auto with_le = [&](const std::string& le) {
        return labels.empty() ? "{le=\"" + le + "\"}"
                              : labels.substr(0, labels.size() - 1) + ",le=\"" + le + "\"}";
      };
      auto counts = h->cumulative();
      for (std::size_t i = 0; i < h->bounds().size(); ++i)
        out += name + "_bucket" + with_le(render_bound(h->bounds()[i])) + ' ' +
               render_value(double(counts[i])) + '\n';
      out += name + "_bucket" + with_le("+Inf") + ' ' + render_value(double(counts.back())) + '\n';
      out += name + "_sum" + labels + ' ' + render_value(h->sum()) + '\n';
      out += name + "_count" + labels + ' ' + render_value(double(counts.back())) + '\n';
    }
  }
  return out;
}

metrics_registry& metrics_registry::process() {
  static metrics_registry registry;
  return registry;
}

void add_process_metrics(metrics_registry& registry) {
  registry.gauge("dde_build_info", "DDE's version, as a label of a constant 1.", {{"version", version()}})
      .set(1);
  registry.gauge("process_resident_memory_bytes", "Resident memory size in bytes.")
      .set(double(resident_memory_bytes()));
  // /proc/self/stat: after the command (in parentheses), field 14 utime, 15 stime, 22 starttime, 23 vsize.
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
  auto close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)), {});
    const double ticks = double(::sysconf(_SC_CLK_TCK));
    if (f.size() > 20 && ticks > 0) {
      registry.gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.").set(std::stod(f[20]));
      std::ifstream proc_stat("/proc/stat");
      std::string key;
      double boot = 0;
      while (proc_stat >> key)
        if (key == "btime" && (proc_stat >> boot)) break;
      if (boot > 0)
        registry
            .gauge("process_start_time_seconds",
                   "Start time of the process since the Unix epoch, in seconds.")
            .set(boot + std::stod(f[19]) / ticks);
    }
  }
  // getrusage, not /proc's clock ticks: a quiet daemon uses less than one 10 ms tick for a while.
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) == 0) {
    auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    registry.counter("process_cpu_seconds_total", "User and system CPU time spent, in seconds.")
        .set(seconds(usage.ru_utime) + seconds(usage.ru_stime));
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++fds;
  registry.gauge("process_open_fds", "Open file descriptors.").set(fds);
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
    registry.gauge("process_max_fds", "The most file descriptors the process may open.")
        .set(double(limit.rlim_cur));
}

std::uint64_t resident_memory_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace dde
