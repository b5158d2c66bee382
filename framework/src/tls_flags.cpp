#include "dde/tls_flags.hpp"

#include <cstdlib>
#include <stdexcept>

#include "net/tls_context.hpp"

namespace dde {
namespace {

std::string flag_or_env(const cli& args, const std::string& name, const char* env) {
  if (args.is_set(name) || !std::getenv(env)) return args.get(name);
  return std::getenv(env);
}

void export_env(const char* env, const std::string& value) {
  if (value.empty())
    ::unsetenv(env);
  else
    ::setenv(env, value.c_str(), 1);
}

}  // namespace

void add_tls_flags(cli& args, bool listening) {
  args.option("tls-cert", "",
              listening ? "PEM certificate (chain): serve https/wss, and present it on outgoing links"
                        : "PEM client certificate presented on outgoing wss/https links")
      .option("tls-key", "", "PEM private key of --tls-cert")
      .option("tls-ca", "", "PEM CA certificate(s) peers are verified against (default: the system's store)");
  if (listening)
    args.flag("tls-verify-client",
              "refuse clients without a certificate signed by --tls-ca (needs --tls-cert)");
}

net::tls_options apply_tls_flags(const cli& args) {
  net::tls_options tls;
  tls.cert_file = flag_or_env(args, "tls-cert", "DDE_TLS_CERT");
  tls.key_file = flag_or_env(args, "tls-key", "DDE_TLS_KEY");
  tls.ca_file = flag_or_env(args, "tls-ca", "DDE_TLS_CA");
  // enabled(), not is_set(): a config file's "tls-verify-client": true counts, and --tls-verify-client=false is off.
  tls.verify_client = args.has("tls-verify-client") && args.enabled("tls-verify-client");
  if (tls.cert_file.empty() != tls.key_file.empty())
    throw std::invalid_argument("--tls-cert and --tls-key go together");
  if (tls.verify_client && !tls.enabled())
    throw std::invalid_argument("--tls-verify-client needs --tls-cert");
  try {
    if (tls.enabled() && args.has("tls-verify-client")) net::make_server_tls_context(tls);
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
  return tls;
}

}  // namespace dde
