#include "dde/core/net/url.hpp"

#include <uriparser/Uri.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace dde::net {
namespace {

std::string_view text_of(const UriTextRangeA& r) {
  if (!r.first || !r.afterLast) return {};
  return {r.first, std::size_t(r.afterLast - r.first)};
}

}  // namespace

std::optional<url_parts> parse_url(std::string_view text) {
  std::string owned(text);  // uriparser wants a range of one buffer; keep it alive while reading
  UriUriA uri;
  const char* error = nullptr;
  if (uriParseSingleUriExA(&uri, owned.data(), owned.data() + owned.size(), &error) != URI_SUCCESS)
    return std::nullopt;
  std::optional<url_parts> out;
  do {
    auto scheme = text_of(uri.scheme), host = text_of(uri.hostText), port = text_of(uri.portText);
    if (scheme.empty() || host.empty() || !text_of(uri.userInfo).empty()) break;
    url_parts parts;
    parts.scheme.assign(scheme);
    std::transform(parts.scheme.begin(), parts.scheme.end(), parts.scheme.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    parts.host.assign(host);
    const char* end_of_authority = uri.hostText.afterLast;
    if (uri.hostData.ip6 || text_of(uri.hostData.ipFuture).size()) ++end_of_authority;  // the ']'
    if (uri.portText.first) {
      end_of_authority = uri.portText.afterLast;
      if (!port.empty()) {
        unsigned value = 0;
        auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) break;
        parts.port = std::uint16_t(value);
      }
    }
    std::string_view rest(end_of_authority, std::size_t(owned.data() + owned.size() - end_of_authority));
    rest = rest.substr(0, rest.find('#'));
    if (rest.empty())
      parts.target = "/";
    else if (rest.front() == '?')
      parts.target = "/" + std::string(rest);
    else
      parts.target.assign(rest);
    out = std::move(parts);
  } while (false);
  uriFreeUriMembersA(&uri);
  return out;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string url_text(const ws_url& url) {
  return (url.tls ? "wss://" : "ws://") + host_port(url.host, url.port) + url.path;
}

}  // namespace dde::net
