#include "dde/runtime/plugin_allow.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "dde/protocol/pool_spec.hpp"  // is_remote_uri

namespace dde::runtime {
namespace {
namespace fs = std::filesystem;

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string strip_file_scheme(const std::string& uri) {
  return uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
}

/// `p` made absolute, `..` and `.` removed and symlinks resolved as far as the path exists.
fs::path canonical_path(const std::string& p) {
  std::error_code ec;
  auto out = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::path(p).lexically_normal() : out;
}

bool path_inside(const fs::path& file, const fs::path& dir) {
  auto rel = file.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != ".." && rel.is_relative();
}

/// A URL whose path could climb out of a prefix: a `..` segment, plain or percent-encoded.
bool climbs(const std::string& url) {
  auto l = lower(url);
  if (l.find("%2e") != std::string::npos || l.find("%2f") != std::string::npos) return true;
  auto query = l.find_first_of("?#");
  auto path = l.substr(0, query);
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    auto seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg == ".." || seg == ".") return true;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return false;
}

bool url_inside(const std::string& url, std::string prefix) {
  if (url.size() < prefix.size() || lower(url.substr(0, prefix.size())) != lower(prefix)) return false;
  // "https://h/plugins" allows "https://h/plugins/x.so", not "https://h/plugins-evil/x.so".
  return prefix.back() == '/' || url.size() == prefix.size() || url[prefix.size()] == '/';
}

}  // namespace

std::string check_plugin_allowed(const std::string& uri, const std::vector<std::string>& allow) {
  if (allow.empty()) return {};
  std::string list;
  for (auto& a : allow) list += (list.empty() ? "" : ", ") + a;
  if (is_remote_uri(uri)) {
    if (climbs(uri)) return "plugin " + uri + " is refused: its URL has a \"..\" or encoded segment";
    for (auto& a : allow)
      if (is_remote_uri(a) && url_inside(uri, a)) return {};
  } else {
    auto file = canonical_path(strip_file_scheme(uri));
    for (auto& a : allow)
      if (!is_remote_uri(a) && path_inside(file, canonical_path(strip_file_scheme(a)))) return {};
  }
  return "plugin " + uri + " is outside the allowed plugin locations (--plugin-allow " + list + "): refused";
}

}  // namespace dde::runtime
