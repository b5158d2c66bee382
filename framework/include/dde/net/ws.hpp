#pragma once
/// \file
/// WebSocket and HTTP transport, with Boost.Beast kept out of this header. Connections are
/// thread-safe to use from anywhere: every call posts to the connection's strand.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "dde/net/tls.hpp"

namespace dde::net {

/// One open WebSocket, server or client side.
class ws_connection {
 public:
  virtual ~ws_connection() = default;
  /// Queues a message. Consecutive binary messages queued while a write is in flight are
  /// concatenated into one WebSocket message (the wire format is self-delimiting).
  virtual void send(std::string data, bool binary) = 0;
  /// Sends a close frame with `reason` and ends the connection.
  virtual void close(std::string reason) = 0;
  /// Stops (true) or restarts (false) reading: backpressure towards the peer.
  virtual void pause_reading(bool paused) = 0;
  /// Bytes queued and not yet written.
  virtual std::size_t queued_bytes() const = 0;
  /// "ip:port" of the peer.
  virtual const std::string& remote() const = 0;
  /// A number unique among the connections of this process.
  virtual std::uint64_t id() const = 0;
};

/// Receives the events of WebSocket connections. Called on the connection's strand.
class ws_handler {
 public:
  virtual ~ws_handler() = default;
  virtual void on_open(const std::shared_ptr<ws_connection>& conn) = 0;
  virtual void on_message(const std::shared_ptr<ws_connection>& conn, std::string data, bool binary) = 0;
  /// Called once per opened connection, with why it ended.
  virtual void on_close(const std::shared_ptr<ws_connection>& conn, const std::string& reason) = 0;
};

struct http_request {
  std::string method;
  std::string target;  ///< path and query
  std::string body;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string remote;
};

struct http_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;
};

/// Handles one HTTP request (not an upgrade). Runs on the connection's strand: must not block.
using http_handler = std::function<http_response(const http_request&)>;

/// Handles one HTTP request and answers later by calling `respond` exactly once, from any thread.
using async_http_handler =
    std::function<void(const http_request&, std::function<void(http_response)> respond)>;

struct server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;                         ///< 0 picks a free port
  std::size_t max_ws_message = 16 * 1024 * 1024;  ///< larger WebSocket messages close with 1009
  /// A WebSocket peer heard from for none of this is taken for gone and closed. Each side beats every
  /// quarter of it (an unsolicited pong, never answered) when it has written nothing else, so a live
  /// peer is always heard from.
  std::chrono::milliseconds ws_idle_timeout{20000};
  std::size_t max_http_body = 1024 * 1024;  ///< larger bodies get 413
  /// With `tls.cert_file` set, every connection is https/wss (plain requests are refused).
  tls_options tls;
  /// Called before every HTTP request is dispatched and before every WebSocket upgrade is accepted
  /// (`websocket_upgrade`); a result is answered instead (and refuses the upgrade). Runs on the
  /// connection's strand: must not block.
  std::function<std::optional<http_response>(const http_request&, bool websocket_upgrade)> authorize;
};

/// An HTTP server that also accepts WebSocket upgrades on registered paths.
class server {
 public:
  virtual ~server() = default;
  static std::unique_ptr<server> create(boost::asio::io_context& io, server_options options);
  virtual void add_websocket(std::string path, std::shared_ptr<ws_handler> handler) = 0;
  virtual void set_http(http_handler handler) = 0;
  /// Like `set_http`, for handlers that answer asynchronously (replaces a synchronous handler).
  virtual void set_http_async(async_http_handler handler) = 0;
  /// Binds and starts accepting.
  virtual std::error_code start() = 0;
  /// The bound port (after `start`).
  virtual std::uint16_t port() const = 0;
  /// Stops accepting and closes open connections.
  virtual void stop() = 0;
};

/// A parsed `ws://host:port/path` or `wss://host:port/path` URL.
struct ws_url {
  std::string host;
  std::uint16_t port = 80;  ///< 443 by default for wss://
  std::string path = "/";
  bool tls = false;  ///< wss://
};
/// Parses a ws:// or wss:// URL (RFC 3986, by uriparser: `ws://[::1]:8000/registry` is host ::1);
/// nullopt for another scheme, no host, a user name or a bad port.
std::optional<ws_url> parse_ws_url(std::string_view url);
/// "host:port", with an IPv6 host in brackets ("[::1]:8000"): for a URL, a Host header or a message.
std::string host_port(const std::string& host, std::uint16_t port);
/// `url` written out again ("wss://[::1]:8000/registry"): for messages.
std::string url_text(const ws_url& url);
/// A comma-separated list of `ws://` or `wss://` URLs (alternatives to fail over between, in order of
/// preference); empty when the list is empty or any element is not a valid URL.
std::vector<ws_url> parse_ws_url_list(std::string_view list);

struct client_options {
  std::size_t max_ws_message = 64 * 1024 * 1024;
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds ws_idle_timeout{20000};  ///< as in `server_options`
  /// For wss:// URLs: the CA to verify the server against and the client certificate to present
  /// (when cert and key are set); when it names neither a CA nor a certificate, the process's
  /// defaults (`set_default_client_tls`) apply. Unused for ws://.
  tls_options tls;
  /// Extra headers sent on the WebSocket handshake (e.g. the cluster secret).
  std::map<std::string, std::string> headers;
};

/// Connects to `url`. On success `handler.on_open` runs, then messages, then `on_close`;
/// on failure only `on_fail` runs, with the reason.
void ws_connect(boost::asio::io_context& io, const ws_url& url, std::shared_ptr<ws_handler> handler,
                std::function<void(const std::string&)> on_fail, client_options options = {});

}  // namespace dde::net
