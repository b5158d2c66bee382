#pragma once
/// \file
/// The TLS flags every daemon has: --tls-cert, --tls-key, --tls-ca and (listening daemons)
/// --tls-verify-client. One certificate serves both ways: the daemon's server certificate, and its
/// client certificate on the links it opens; --tls-ca is the CA peers must chain to.

#include <CLI/CLI.hpp>

#include "dde/net/tls.hpp"

namespace dde {

/// Adds the TLS flags to `app`, filling `tls`; `listening` adds --tls-verify-client too. DDE_TLS_CERT,
/// DDE_TLS_KEY and DDE_TLS_CA fill in those not given, which is how an activator hands its settings
/// to the isolate systems it starts.
void add_tls_flags(CLI::App& app, net::tls_options& tls, bool listening);

/// Checks the TLS flags' values (the files can be used), makes them the settings of every outgoing
/// wss:// and https:// link, and exports them to child processes. Throws std::invalid_argument.
void apply_tls_flags(const net::tls_options& tls, bool listening);

/// "wss://" when `tls` listens with TLS, else "ws://" (for URLs a daemon hands out).
inline const char* ws_scheme(const net::tls_options& tls) { return tls.enabled() ? "wss://" : "ws://"; }

}  // namespace dde
