#include <charconv>
#include <optional>

#include "dde/mqs/config.hpp"
#include "dde/net/ws.hpp"

namespace dde::mqs {
namespace {

/// `%XX` escapes of a URL's vhost ("%2F" is "/"); nullopt for a broken escape.
std::optional<std::string> percent_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    unsigned value = 0;
    if (i + 2 >= text.size()) return std::nullopt;
    auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
    if (ec != std::errc() || end != text.data() + i + 3) return std::nullopt;
    out += char(value);
    i += 2;
  }
  return out;
}

/// `host[:port]` or `[v6]:port`; the error names the node.
std::variant<broker_node, std::string> parse_node(const std::string& text, std::uint16_t default_port) {
  broker_node node{{}, default_port};
  std::string port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) return "broker node \"" + text + "\": an IPv6 address needs its ]";
    node.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') return "broker node \"" + text + "\": expected :PORT after ]";
      port = text.substr(close + 2);
    }
  } else {
    auto colon = text.find(':');
    node.host = text.substr(0, colon);
    if (colon != std::string::npos) port = text.substr(colon + 1);
  }
  if (node.host.empty()) return "broker node \"" + text + "\" has no host";
  if (!port.empty() || text.back() == ':') {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return "broker node \"" + text + "\": the port must be a number from 1 to 65535";
    node.port = std::uint16_t(value);
  }
  return node;
}

}  // namespace

std::string broker_node::str() const { return net::host_port(host, port); }

std::variant<broker_url, std::string> parse_broker_url(const std::string& text) {
  broker_url url;
  std::string rest;
  if (text.rfind("amqp://", 0) == 0) {
    rest = text.substr(7);
  } else if (text.rfind("amqps://", 0) == 0) {
    url.tls = true;
    rest = text.substr(8);
  } else {
    return "--broker must start with amqp:// or amqps://, got \"" + text + "\"";
  }
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) {
    auto vhost = percent_decode(rest.substr(slash + 1));
    if (!vhost) return "--broker: the vhost \"" + rest.substr(slash + 1) + "\" has a broken %-escape";
    url.vhost = *vhost;
  }
  if (auto at = authority.rfind('@'); at != std::string::npos) {
    url.user = authority.substr(0, at);
    authority = authority.substr(at + 1);
    if (url.user.find(':') != std::string::npos)
      return "--broker must not hold the password (ps shows the command line): give it in "
             "--broker-password-file or $DDE_BROKER_PASSWORD";
  }
  std::size_t start = 0;
  while (start <= authority.size()) {
    auto comma = authority.find(',', start);
    auto item = authority.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto node = parse_node(item, url.tls ? 5671 : 5672);
    if (auto* error = std::get_if<std::string>(&node)) return "--broker: " + *error;
    url.nodes.push_back(std::get<broker_node>(node));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return url;
}

}  // namespace dde::mqs
