#include "dde/core/tls_flags.hpp"

#include <cstdlib>
#include <stdexcept>

#include "net/tls_context.hpp"

namespace dde {
namespace {

void export_env(const char* env, const std::string& value) {
  if (value.empty())
    ::unsetenv(env);
  else
    ::setenv(env, value.c_str(), 1);
}

}  // namespace

void add_tls_flags(CLI::App& app, net::tls_options& tls, bool listening) {
  app.add_option("--tls-cert", tls.cert_file,
                 listening ? "PEM certificate (chain): serve https/wss, and present it on outgoing links"
                           : "PEM client certificate presented on outgoing wss/https links")
      ->type_name("FILE")
      ->envname("DDE_TLS_CERT");
  app.add_option("--tls-key", tls.key_file, "PEM private key of --tls-cert")
      ->type_name("FILE")
      ->envname("DDE_TLS_KEY");
  app.add_option("--tls-ca", tls.ca_file,
                 "PEM CA certificate(s) peers are verified against (default: the system's store)")
      ->type_name("FILE")
      ->envname("DDE_TLS_CA");
  if (listening)
    app.add_flag("--tls-verify-client", tls.verify_client,
                 "refuse clients without a certificate signed by --tls-ca (needs --tls-cert)");
}

void apply_tls_flags(const net::tls_options& tls, bool listening) {
  if (tls.cert_file.empty() != tls.key_file.empty())
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  if (tls.verify_client && !tls.enabled())
    throw std::invalid_argument("--tls-verify-client needs --tls-cert");
  try {
    if (tls.enabled() && listening) net::make_server_tls_context(tls);
    // Only files named here are checked now: loading the system's CA store (about 55 ms of CPU here)
    // on every daemon's and isolate system's start would be paid by the many that never open a
    // wss/https link; a link that does loads it then (and names what failed).
    if (!tls.ca_file.empty() || tls.enabled()) net::make_client_tls_context(tls);
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
  net::set_default_client_tls(tls);
  export_env("DDE_TLS_CERT", tls.cert_file);
  export_env("DDE_TLS_KEY", tls.key_file);
  export_env("DDE_TLS_CA", tls.ca_file);
}

}  // namespace dde
