#include "host/load_failures.hpp"

#include "dde/metrics.hpp"

namespace dde::host {

std::string_view to_string(plugin_failure reason) {
  switch (reason) {
    case plugin_failure::missing:
      return "missing";
    case plugin_failure::not_elf:
      return "not_elf";
    case plugin_failure::dlopen:
      return "dlopen";
    case plugin_failure::entry_points:
      return "entry_points";
    case plugin_failure::abi:
      return "abi";
    case plugin_failure::constructor:
      return "constructor";
    case plugin_failure::fetch:
      return "fetch";
    case plugin_failure::crashed:
      return "crashed";
    case plugin_failure::checksum:
      return "checksum";
    case plugin_failure::not_allowed:
      return "not_allowed";
    case plugin_failure::other:
      break;
  }
  return "other";
}

void count_plugin_load_failure(const std::string& pool, plugin_failure reason) {
  metrics_registry::process()
      .counter("dde_host_plugin_load_failures_total",
               "Plugin loads refused: a deploy, hot swap, worker restart or added worker whose plugin is "
               "missing, not ELF, has another ABI or SHA-256, lies outside --plugin-allow or throws in its "
               "constructor.",
               {{"pool", pool}, {"reason", std::string(to_string(reason))}})
      .add();
}

}  // namespace dde::host
