#pragma once
// The files the registry serves from its binary: the dashboard (registry/web), the OpenAPI document of
// its API (registry/openapi.json) and the pool spec's JSON Schema (registry/schemas), compiled in by
// cmake/embed_files.cmake.

#include <span>
#include <string_view>

namespace dde::registry {

struct web_asset {
  std::string_view path;  ///< "/index.html"
  std::string_view content_type;
  std::string_view body;
};

/// The file served at `path`, or nullptr.
const web_asset* find_web_asset(std::string_view path);

/// Every file, in the order registry/CMakeLists.txt lists them.
std::span<const web_asset> web_assets();

}  // namespace dde::registry
