#pragma once
/// \file
/// The one contract between an isolate system and its node's activator that does not travel over
/// `/control` (activator/PROTOCOL.md, "Plugin swaps"): before a new plugin version of a pool may take
/// a message, the isolate system writes the version's md5 to `<plugin cache>/<system>.<isolate>.swapping`,
/// and removes the file once that version finished a message (when it sends `pluginGood`). A process
/// that dies in between leaves the file, so its activator refuses that version on the restart even
/// when the `pluginSwapping` event was still queued in the dying process.

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace dde::protocol {

inline std::filesystem::path swap_marker_path(const std::filesystem::path& plugin_cache,
                                              std::string_view system, std::string_view isolate) {
  return plugin_cache / (std::string(system) + "." + std::string(isolate) + ".swapping");
}

/// Writes `md5` to `marker` (creating its folder); false when it cannot.
inline bool write_swap_marker(const std::filesystem::path& marker, const std::string& md5) {
  std::error_code ignored;
  std::filesystem::create_directories(marker.parent_path(), ignored);
  std::ofstream out(marker, std::ios::trunc);
  out << md5;
  out.close();
  return bool(out);
}

/// The md5 in `marker`, or "" when there is none.
inline std::string read_swap_marker(const std::filesystem::path& marker) {
  std::ifstream in(marker);
  std::string md5;
  in >> md5;
  return md5;
}

inline void remove_swap_marker(const std::filesystem::path& marker) {
  std::error_code ignored;
  std::filesystem::remove(marker, ignored);
}

}  // namespace dde::protocol
