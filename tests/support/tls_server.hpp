#pragma once
// TLS for tests: a throw-away CA and a server certificate for 127.0.0.1 made with the `openssl`
// CLI, and `openssl s_server -WWW` serving a directory over https on 127.0.0.1.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "dde_test.hpp"

namespace dde::test {

/// PEM files: the CA that signed the server certificate, and the server's certificate and key.
struct test_certificates {
  std::filesystem::path ca, cert, key;
};

/// Makes a CA and a certificate for IP 127.0.0.1 (and DNS localhost) in `dir`; throws on failure.
test_certificates make_test_certificates(const std::filesystem::path& dir);

/// A running `openssl s_server -WWW`: https://127.0.0.1:port/NAME serves `root`/NAME.
struct tls_file_server {
  std::uint16_t port = 0;
  std::unique_ptr<child_process> proc;
  std::string url(const std::string& name) const {
    return "https://127.0.0.1:" + std::to_string(port) + "/" + name;
  }
};
tls_file_server start_tls_file_server(const std::filesystem::path& root, const test_certificates& certs,
                                      const std::filesystem::path& log_file);

}  // namespace dde::test
