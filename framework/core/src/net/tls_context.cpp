#include "tls_context.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace dde::net {
namespace ssl = boost::asio::ssl;

namespace {

void check(const boost::system::error_code& ec, const std::string& what, const std::string& file) {
  if (!ec) return;
  // OpenSSL says only "asio.ssl error" for a file it cannot open: say why it cannot.
  std::string why = ec.message();
  if (FILE* f = std::fopen(file.c_str(), "r"))
    std::fclose(f);
  else
    why = std::strerror(errno);
  throw std::runtime_error("cannot use " + what + " " + file + ": " + why);
}

void load_identity(ssl::context& ctx, const tls_options& o) {
  boost::system::error_code ec;
  ctx.use_certificate_chain_file(o.cert_file, ec);
  check(ec, "TLS certificate", o.cert_file);
  ctx.use_private_key_file(o.key_file.empty() ? o.cert_file : o.key_file, ssl::context::pem, ec);
  check(ec, "TLS key", o.key_file);
  if (SSL_CTX_check_private_key(ctx.native_handle()) != 1)
    throw std::runtime_error("TLS key " + o.key_file + " does not match the certificate " + o.cert_file);
}

tls_options& client_defaults() {
  static tls_options options;
  return options;
}

}  // namespace

void set_default_client_tls(tls_options options) {
  options.verify_client = false;
  client_defaults() = std::move(options);
}

const tls_options& default_client_tls() { return client_defaults(); }

std::shared_ptr<ssl::context> make_server_tls_context(const tls_options& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  load_identity(*ctx, o);
  if (o.verify_client) {
    if (o.ca_file.empty()) throw std::runtime_error("--tls-verify-client needs a CA file (--tls-ca)");
    boost::system::error_code ec;
    ctx->load_verify_file(o.ca_file, ec);
    check(ec, "CA file", o.ca_file);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

std::shared_ptr<ssl::context> make_client_tls_context(const tls_options& given) {
  const tls_options& o = given.ca_file.empty() && given.cert_file.empty() ? default_client_tls() : given;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  if (!o.ca_file.empty()) {
    ctx->load_verify_file(o.ca_file, ec);
    check(ec, "CA file", o.ca_file);
  } else {
    ctx->set_default_verify_paths(ec);
    if (ec) throw std::runtime_error("cannot load the system's CA certificates: " + ec.message());
  }
  if (!o.cert_file.empty() && !o.key_file.empty()) load_identity(*ctx, o);
  return ctx;
}

bool prepare_client_tls(SSL* ssl, const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  bool ip = !ec;
  // SNI carries names only (RFC 6066); the certificate is checked against the name or the address.
  if (!ip && !SSL_set_tlsext_host_name(ssl, host.c_str())) return false;
  SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (ip) return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) == 1;
}

std::string describe_tls_error(const boost::beast::error_code& ec, SSL* ssl) {
  long verify = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
  if (verify != X509_V_OK) return ec.message() + " (" + X509_verify_cert_error_string(verify) + ")";
  return ec.message();
}

}  // namespace dde::net
