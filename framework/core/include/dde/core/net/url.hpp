#pragma once
// URLs as RFC 3986 has them, parsed by uriparser rather than by hand: a bracketed IPv6 host
// (`http://[::1]:8000`) is a host and a port, not a host named "[::1]:8000". The ws:// and http://
// parsers (dde/net/ws.hpp, dde/net/http_client.hpp) are built on it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dde/net/ws.hpp"

namespace dde::net {

struct url_parts {
  std::string scheme;                 ///< lower case
  std::string host;                   ///< without the brackets of an IPv6 literal
  std::optional<std::uint16_t> port;  ///< when the URL names one
  std::string target = "/";           ///< path and query ("/" when empty), without a fragment
};

/// Parses an absolute URL with a host; nullopt when it is not one, names a user, or has a port that
/// is not 1 to 65535.
std::optional<url_parts> parse_url(std::string_view text);

// host_port (an IPv6 host in brackets) is declared in dde/net/ws.hpp, for the daemons too.

}  // namespace dde::net
