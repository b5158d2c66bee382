#pragma once
// Counts refused plugin loads per pool and reason in the process's metrics
// (`dde_host_plugin_load_failures_total`): a deploy whose plugin is missing or does not load, a hot
// swap refused, a worker whose constructor throws when it is restarted or added.

#include <string>

namespace dde::host {

/// The reason label of a load error: missing, not_elf, dlopen, entry_points, abi, constructor,
/// fetch, crashed or other.
std::string plugin_load_failure_reason(const std::string& error);

/// Adds one to `dde_host_plugin_load_failures_total{pool=<topic>, reason=...}`.
void count_plugin_load_failure(const std::string& pool, const std::string& error);

}  // namespace dde::host
