#pragma once
/// \file
/// TLS settings shared by the server (https/wss), the WebSocket client (wss) and the HTTP client
/// (https), with OpenSSL and Boost.Asio kept out of this header.

#include <string>

namespace dde::net {

/// PEM files for one side of a TLS link. A server listens with TLS when `cert_file` is set; a
/// client presents `cert_file`/`key_file` as its certificate when both are set, and verifies the
/// server against `ca_file` (the system's CA store when empty).
struct tls_options {
  std::string cert_file;       ///< certificate (chain) presented to the peer
  std::string key_file;        ///< its private key
  std::string ca_file;         ///< CA certificate(s) that peers' certificates must chain to
  bool verify_client = false;  ///< server: refuse clients without a certificate signed by `ca_file`

  /// Server side: whether to listen with TLS.
  bool enabled() const { return !cert_file.empty(); }
};

/// The TLS settings of outgoing links (wss://, https://) whose own options name neither a CA nor a
/// certificate: a daemon sets them once at startup, from its flags, before it connects anywhere.
void set_default_client_tls(tls_options options);
const tls_options& default_client_tls();

}  // namespace dde::net
