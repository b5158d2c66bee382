#pragma once
// TLS for tests: a throw-away CA and a server certificate for 127.0.0.1 made with the `openssl`
// CLI, and `openssl s_server -WWW` serving a directory over https on 127.0.0.1.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "dde_test.hpp"

namespace dde::test {

/// PEM files: the CA that signed the server certificate, and the server's certificate and key.
struct test_certificates {
  std::filesystem::path ca, cert, key;
};

/// Makes a CA and a certificate for IP 127.0.0.1 (and DNS localhost) in `dir`; throws on failure.
test_certificates make_test_certificates(const std::filesystem::path& dir);

/// A CA and a certificate/key per name made by deploy/gen-ca.sh (IP 127.0.0.1, DNS localhost;
/// usable as server and as client certificates).
struct cluster_certificates {
  std::filesystem::path dir;
  std::filesystem::path ca() const { return dir / "ca.pem"; }
  std::filesystem::path cert(const std::string& name) const { return dir / (name + ".pem"); }
  std::filesystem::path key(const std::string& name) const { return dir / (name + ".key"); }
};

/// Runs deploy/gen-ca.sh in `dir` (created) for `names`; throws with its output on failure.
cluster_certificates make_cluster_certificates(const std::filesystem::path& dir,
                                               const std::vector<std::string>& names);

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
