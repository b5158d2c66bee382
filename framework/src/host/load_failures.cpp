#include "host/load_failures.hpp"

#include <string_view>

#include "dde/metrics.hpp"

namespace dde::host {

std::string plugin_load_failure_reason(const std::string& error) {
  // The errors are the plugin loader's and fetcher's own sentences (plugin_loader.cpp, router.cpp).
  auto has = [&](std::string_view part) { return error.find(part) != std::string::npos; };
  if (has("cannot fetch plugin")) return "fetch";
  if (has("crashed the isolate system")) return "crashed";
  if (has("does not exist") || has("missing or unreadable") || has("is not a regular file")) return "missing";
  if (has("is not an ELF")) return "not_elf";
  if (has("ABI version")) return "abi";
  if (has("lacks")) return "entry_points";
  if (has("threw")) return "constructor";
  if (has("cannot load plugin") || has("cannot copy plugin")) return "dlopen";
  return "other";
}

void count_plugin_load_failure(const std::string& pool, const std::string& error) {
  metrics_registry::process()
      .counter("dde_host_plugin_load_failures_total",
               "Plugin loads refused: a deploy, hot swap, worker restart or added worker whose plugin is "
               "missing, not ELF, has another ABI or throws in its constructor.",
               {{"pool", pool}, {"reason", plugin_load_failure_reason(error)}})
      .add();
}

}  // namespace dde::host
