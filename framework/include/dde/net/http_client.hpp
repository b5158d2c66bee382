#pragma once
/// \file
/// A small synchronous HTTP/1.1 client (http:// and https://) for command-line tools, the plugin
/// fetcher and tests, with Boost.Beast kept out of this header. One request per connection; every
/// step has a deadline. Blocking: never call it on an Asio thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace dde::net {

/// A parsed `http://host[:port][/path]` or `https://...` URL.
struct http_url {
  std::string host;
  std::uint16_t port = 80;
  std::string target = "/";  ///< path and query
  bool tls = false;          ///< https://
};

/// Parses an http:// or https:// URL; nullopt for any other scheme, an empty host or a bad port.
std::optional<http_url> parse_http_url(std::string_view url);

/// What an HTTP exchange produced: a response (`error` empty), or why there was none.
struct http_result {
  int status = 0;  ///< 0 when no response arrived
  std::string body;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string error;                           ///< empty when a response arrived (whatever its status)
  bool answered() const { return error.empty(); }
};

/// How one exchange runs.
struct http_options {
  /// The whole exchange (resolve, connect, TLS handshake, write, read) must end within this.
  std::chrono::milliseconds timeout{30000};
  /// https: a PEM file with the CA certificate(s) to trust instead of the system store. The server's
  /// certificate is always verified, against its host name or IP address; SNI is sent for names.
  std::string ca_file;
  /// https: a client certificate and its key (PEM) to present, for servers that verify clients.
  /// With neither `ca_file` nor a certificate, the process's defaults apply (`set_default_client_tls`).
  std::string cert_file, key_file;
  /// When set, the body of a 200 response is written to this file (created or truncated) instead of
  /// `http_result::body`; any other status keeps its body in memory. A failed download removes it.
  std::filesystem::path body_file;
  /// Larger response bodies fail the exchange.
  std::uint64_t max_body = 64ull * 1024 * 1024;
  /// When not null, setting it to true from another thread abandons the exchange within ~50 ms.
  const std::atomic<bool>* cancel = nullptr;
};

/// Sends one request and waits for the whole response. `headers` are added as given (Host,
/// Content-Length and, for a non-empty body without one, `Content-Type: application/json` are set
/// by the client). Never throws.
http_result http_fetch(std::string_view method, std::string_view url, std::string_view body,
                       const std::map<std::string, std::string>& headers, const http_options& options);

/// Same, with only a deadline.
http_result http_fetch(std::string_view method, std::string_view url, std::string_view body = {},
                       const std::map<std::string, std::string>& headers = {},
                       std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

}  // namespace dde::net
