// WebSocket client connect: resolve -> TCP connect -> [TLS handshake] -> handshake -> ws_session.
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>

#include "dde/core/net/url.hpp"
#include "tls_context.hpp"
#include "ws_session.hpp"

namespace dde::net {

std::optional<ws_url> parse_ws_url(std::string_view url) {
  auto parts = parse_url(url);
  if (!parts || (parts->scheme != "ws" && parts->scheme != "wss")) return std::nullopt;
  ws_url out;
  out.tls = parts->scheme == "wss";
  out.port = parts->port.value_or(out.tls ? 443 : 80);
  out.host = std::move(parts->host);
  out.path = std::move(parts->target);
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

namespace {

using on_fail_fn = std::function<void(const std::string&)>;

std::string where(const ws_url& url) { return host_port(url.host, url.port); }

/// TLS over the connected `tcp`, then the WebSocket handshake.
void start_tls(std::shared_ptr<beast::tcp_stream> tcp, const ws_url& url, std::shared_ptr<ws_handler> handler,
               on_fail_fn on_fail, const client_options& options) {
  std::shared_ptr<boost::asio::ssl::context> ctx;
  try {
    ctx = make_client_tls_context(options.tls);
  } catch (const std::exception& e) {
    return on_fail(e.what());
  }
  auto stream = std::make_shared<tls_stream>(std::move(*tcp), *ctx);
  if (!prepare_client_tls(stream->native_handle(), url.host))
    return on_fail("cannot set the TLS server name " + url.host);
  beast::get_lowest_layer(*stream).expires_after(options.connect_timeout);
  stream->async_handshake(boost::asio::ssl::stream_base::client,
                          [stream, ctx, url, handler, on_fail, options](beast::error_code ec) {
                            if (ec)
                              return on_fail("TLS handshake with " + where(url) +
                                             " failed: " + describe_tls_error(ec, stream->native_handle()));
                            auto session = std::make_shared<ws_session<tls_stream>>(
                                std::move(*stream), handler, options.max_ws_message, beast::role_type::client,
                                options.ws_idle_timeout, ctx);
                            session->set_handshake_headers(options.headers);
                            session->run_client(url.port == 443 ? url.host : where(url), url.path, on_fail);
                          });
}

}  // namespace

void ws_connect(boost::asio::io_context& io, const ws_url& url, std::shared_ptr<ws_handler> handler,
                std::function<void(const std::string&)> on_fail, client_options options) {
  auto strand = boost::asio::make_strand(io);
  auto resolver = std::make_shared<tcp::resolver>(strand);
  resolver->async_resolve(url.host, std::to_string(url.port),
                          [resolver, strand, url, handler, on_fail, options](
                              beast::error_code ec, tcp::resolver::results_type results) {
                            if (ec) return on_fail("cannot resolve " + url.host + ": " + ec.message());
                            auto stream = std::make_shared<beast::tcp_stream>(strand);
                            stream->expires_after(options.connect_timeout);
                            stream->async_connect(results, [stream, url, handler, on_fail, options](
                                                               beast::error_code ec, const tcp::endpoint&) {
                              if (ec) return on_fail("cannot connect to " + where(url) + ": " + ec.message());
                              if (url.tls) return start_tls(stream, url, handler, on_fail, options);
                              auto session = std::make_shared<ws_session<beast::tcp_stream>>(
                                  std::move(*stream), handler, options.max_ws_message,
                                  beast::role_type::client, options.ws_idle_timeout);
                              session->set_handshake_headers(options.headers);
                              session->run_client(where(url), url.path, on_fail);
                            });
                          });
}

}  // namespace dde::net
