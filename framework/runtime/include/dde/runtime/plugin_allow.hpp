#pragma once
// The plugin allow list (--plugin-allow): where an isolate system may load plugins from.

#include <string>
#include <vector>

namespace dde::runtime {

/// Why `uri` (a path, file://, http:// or https:// URI) lies outside every entry of `allow` (directories,
/// or http(s) URL prefixes), or empty when it is inside one or `allow` is empty. Paths are compared
/// after canonicalisation (symlinks resolved, no `..`); a URL with a `..` segment is refused.
std::string check_plugin_allowed(const std::string& uri, const std::vector<std::string>& allow);

}  // namespace dde::runtime
