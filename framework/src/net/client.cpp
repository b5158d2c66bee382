// WebSocket client connect: resolve -> TCP connect -> handshake -> ws_session.
#include <charconv>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>

#include "ws_session.hpp"

namespace dde::net {

std::optional<ws_url> parse_ws_url(std::string_view url) {
  constexpr std::string_view scheme = "ws://";
  if (url.substr(0, scheme.size()) != scheme) return std::nullopt;
  url.remove_prefix(scheme.size());
  ws_url out;
  auto slash = url.find('/');
  auto hostport = url.substr(0, slash);
  out.path = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  auto colon = hostport.rfind(':');
  if (colon != std::string_view::npos) {
    auto port = hostport.substr(colon + 1);
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535) return std::nullopt;
    out.port = std::uint16_t(value);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) return std::nullopt;
  out.host = std::string(hostport);
  return out;
}

std::vector<ws_url> parse_ws_url_list(std::string_view list) {
  std::vector<ws_url> out;
  while (true) {
    auto comma = list.find(',');
    auto url = parse_ws_url(list.substr(0, comma));
    if (!url) return {};
    out.push_back(std::move(*url));
    if (comma == std::string_view::npos) return out;
    list.remove_prefix(comma + 1);
  }
}

void ws_session::set_handshake_headers(const std::map<std::string, std::string>& headers) {
  if (headers.empty()) return;
  ws_.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (auto& [name, value] : headers) req.set(name, value);
  }));
}

void ws_connect(boost::asio::io_context& io, const ws_url& url, std::shared_ptr<ws_handler> handler,
                std::function<void(const std::string&)> on_fail, client_options options) {
  auto strand = boost::asio::make_strand(io);
  auto resolver = std::make_shared<tcp::resolver>(strand);
  resolver->async_resolve(
      url.host, std::to_string(url.port),
      [resolver, strand, url, handler, on_fail, options](beast::error_code ec, tcp::resolver::results_type results) {
        if (ec) return on_fail("cannot resolve " + url.host + ": " + ec.message());
        auto stream = std::make_shared<beast::tcp_stream>(strand);
        stream->expires_after(options.connect_timeout);
        stream->async_connect(results, [stream, url, handler, on_fail, options](beast::error_code ec,
                                                                                const tcp::endpoint&) {
          if (ec)
            return on_fail("cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " + ec.message());
          auto session = std::make_shared<ws_session>(std::move(*stream), handler, options.max_ws_message,
                                                      beast::role_type::client);
          session->set_handshake_headers(options.headers);
          session->run_client(url.host + ":" + std::to_string(url.port), url.path, on_fail);
        });
      });
}

}  // namespace dde::net
