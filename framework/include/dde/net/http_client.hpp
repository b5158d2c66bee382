#pragma once
/// \file
/// A small synchronous HTTP/1.1 client (http:// only) for command-line tools and tests, with
/// Boost.Beast kept out of this header. One request per connection; every step has a deadline.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dde::net {

/// A parsed `http://host[:port][/path]` URL.
struct http_url {
  std::string host;
  std::uint16_t port = 80;
  std::string target = "/";  ///< path and query
};

/// Parses an http:// URL; nullopt for any other scheme, an empty host or a bad port.
std::optional<http_url> parse_http_url(std::string_view url);

/// What an HTTP exchange produced: a response (`error` empty), or why there was none.
struct http_result {
  int status = 0;  ///< 0 when no response arrived
  std::string body;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string error;                           ///< empty when a response arrived (whatever its status)
  bool answered() const { return error.empty(); }
};

/// Sends one request and waits for the whole response, at most `timeout` in all (resolve,
/// connect, write and read). `headers` are added as given (Host, Content-Length and, for a
/// non-empty body without one, `Content-Type: application/json` are set by the client).
/// Never throws.
http_result http_fetch(std::string_view method, std::string_view url, std::string_view body = {},
                       const std::map<std::string, std::string>& headers = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

}  // namespace dde::net
