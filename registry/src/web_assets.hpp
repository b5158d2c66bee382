#pragma once
// The dashboard's static files (registry/web), compiled into the registry by cmake/embed_files.cmake.

#include <string_view>

namespace dde::registry {

struct web_asset {
  std::string_view path;  ///< "/index.html"
  std::string_view content_type;
  std::string_view body;
};

/// The file served at `path`, or nullptr.
const web_asset* find_web_asset(std::string_view path);

}  // namespace dde::registry
