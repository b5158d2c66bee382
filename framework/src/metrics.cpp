#include "dde/metrics.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>

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

}  // namespace

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

metric_cell& metrics_registry::cell(const std::string& name, kind type, const std::string& help,
                                    const metric_labels& labels) {
  std::lock_guard lock(mutex_);
  auto& f = families_[name];
  if (f.series.empty() && f.help.empty()) {
    f.type = type;
    f.help = help;
  }
  auto& slot = f.series[render_labels(labels)];
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
    if (f.series.empty()) continue;
    out += "# HELP " + name + ' ' + f.help + '\n';
    out += "# TYPE " + name + (f.type == kind::counter ? " counter\n" : " gauge\n");
    for (auto& [labels, c] : f.series) out += name + labels + ' ' + render_value(c->value()) + '\n';
  }
  return out;
}

metrics_registry& metrics_registry::process() {
  static metrics_registry registry;
  return registry;
}

std::uint64_t resident_memory_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace dde
