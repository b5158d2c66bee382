#pragma once
// The parts of an HTTP request target ("/path?query"): its path, and one parameter of its query. Small
// and free of Beast on purpose: every HTTP handler includes it.

#include <optional>
#include <string>
#include <string_view>

namespace dde::net {

/// The path of a request target, without its query: "/a?b" -> "/a", "?x" -> "".
constexpr std::string_view target_path(std::string_view target) { return target.substr(0, target.find('?')); }

/// The value of parameter `name` in the target's query ("/p?a=1&name=v"), percent-decoded ('+' is a
/// space); nullopt when the query has no such parameter. The first occurrence wins.
std::optional<std::string> query_param(std::string_view target, std::string_view name);

/// `text` for a path segment or a query value: unreserved characters (RFC 3986: letters, digits,
/// `-_.~`) as they are, every other byte as %XX.
std::string percent_encode(std::string_view text);

}  // namespace dde::net
