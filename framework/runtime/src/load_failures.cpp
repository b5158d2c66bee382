#include "dde/runtime/load_failures.hpp"

#include <iterator>

#include "dde/core/metrics.hpp"

namespace dde::runtime {

std::string_view to_string(plugin_failure reason) {
  // In the order of the enum: `other` first, `not_allowed` last.
  static constexpr std::string_view labels[] = {"other",        "missing",  "not_elf",     "dlopen",
                                                "entry_points", "abi",      "constructor", "fetch",
                                                "crashed",      "checksum", "not_allowed"};
  static_assert(std::size(labels) == std::size_t(plugin_failure::not_allowed) + 1,
                "a label for every reason");
  auto i = std::size_t(reason);
  return i < std::size(labels) ? labels[i] : "other";
}

namespace {

metric_cell& load_failures(const std::string& pool, plugin_failure reason) {
  return metrics_registry::process().counter(
      "dde_host_plugin_load_failures_total",
      "Plugin loads refused: a deploy, hot swap, worker restart or added worker whose plugin is "
      "missing, not ELF, has another ABI or SHA-256, lies outside --plugin-allow or throws in its "
      "constructor.",
      {{"pool", pool}, {"reason", std::string(to_string(reason))}});
}

}  // namespace

void count_plugin_load_failure(const std::string& pool, plugin_failure reason) {
  load_failures(pool, reason).add();
}

void touch_plugin_load_failures(const std::string& pool) {
  for (std::size_t i = 0; i <= std::size_t(plugin_failure::not_allowed); ++i)
    load_failures(pool, plugin_failure(i));
}

}  // namespace dde::runtime
