#pragma once
// Why a plugin load failed, as a code the loader, the fetcher and the allow/sha256 checks return beside
// their message, and the count of refused loads per pool and reason in the process's metrics
// (`dde_host_plugin_load_failures_total`): a deploy whose plugin is missing or does not load, a hot
// swap refused, a worker whose constructor throws when it is restarted or added.

#include <string>
#include <string_view>

namespace dde::runtime {

/// The reason of a refused plugin load; `to_string` gives the metric's `reason` label.
/// `other` is 0: a failure of a dde::result that carries no code reads as `other`.
enum class plugin_failure {
  other,         ///< anything else
  missing,       ///< no such file, not a regular file, unreadable
  not_elf,       ///< not an ELF shared object
  dlopen,        ///< dlopen (or the private copy before it) failed
  entry_points,  ///< lacks the DDE_WORKER / DDE_ROUTER entry points
  abi,           ///< built for another ABI version
  constructor,   ///< the worker's or router's constructor threw
  fetch,         ///< an http(s) plugin could not be downloaded
  crashed,       ///< the version crashed the isolate system before it finished a message
  checksum,      ///< its SHA-256 is not the deploy's `sha256`
  not_allowed,   ///< outside every `--plugin-allow` location; keep it last (to_string relies on it)
};

/// The label: "missing", "not_elf", "dlopen", "entry_points", "abi", "constructor", "fetch", "crashed",
/// "checksum", "not_allowed" or "other".
std::string_view to_string(plugin_failure reason);

/// Adds one to `dde_host_plugin_load_failures_total{pool=<topic>, reason=to_string(reason)}`.
void count_plugin_load_failure(const std::string& pool, plugin_failure reason);
/// Creates `pool`'s series of every reason at 0 (a pool's counters are there from its start).
void touch_plugin_load_failures(const std::string& pool);

}  // namespace dde::runtime
