#pragma once
// OpenSSL contexts built from `tls_options`, shared by the server, the WebSocket client and the
// HTTP client. Private header.

#include <boost/asio/ssl.hpp>
#include <boost/beast/core/error.hpp>
#include <memory>
#include <string>

#include "dde/net/tls.hpp"

namespace dde::net {

/// A server context: certificate and key, and with `verify_client` the CA that client certificates
/// must chain to. Throws std::runtime_error naming the file that cannot be used.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const tls_options& options);

/// A client context: trusts `ca_file` (or the system store) and presents `cert_file`/`key_file`
/// when both are set. Throws std::runtime_error naming the file that cannot be used.
std::shared_ptr<boost::asio::ssl::context> make_client_tls_context(const tls_options& options);

/// Prepares `ssl` for a handshake with `host`: SNI for names, and peer verification against the
/// name or the IP address. Returns false when the name cannot be set.
bool prepare_client_tls(SSL* ssl, const std::string& host);

/// `ec` with OpenSSL's reason for a failed certificate verification, when there is one.
std::string describe_tls_error(const boost::beast::error_code& ec, SSL* ssl);

}  // namespace dde::net
