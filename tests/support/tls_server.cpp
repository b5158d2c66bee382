#include "tls_server.hpp"

#include <sys/wait.h>

#include <fstream>
#include <stdexcept>
#include <vector>

namespace dde::test {
namespace fs = std::filesystem;

namespace {

void run_openssl(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process p(argv, log);
  auto status = p.wait_exit(60s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
    throw std::runtime_error("openssl " + args.front() + " failed:\n" + p.log());
}

}  // namespace

test_certificates make_test_certificates(const fs::path& dir) {
  fs::create_directories(dir);
  test_certificates c{dir / "ca.pem", dir / "server.pem", dir / "server.key"};
  auto log = dir / "openssl.log";
  auto ca_key = (dir / "ca.key").string(), csr = (dir / "server.csr").string(),
       ext = (dir / "server.ext").string();
  std::ofstream(ext) << "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n";
  run_openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", c.ca.string(),
               "-days", "2", "-subj", "/CN=DDE test CA"},
              log);
  run_openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", c.key.string(), "-out", csr, "-subj",
               "/CN=127.0.0.1"},
              log);
  run_openssl({"x509", "-req", "-in", csr, "-CA", c.ca.string(), "-CAkey", ca_key, "-CAcreateserial", "-out",
               c.cert.string(), "-days", "2", "-extfile", ext},
              log);
  return c;
}

cluster_certificates make_cluster_certificates(const fs::path& dir, const std::vector<std::string>& names) {
  fs::create_directories(dir);
  std::vector<std::string> argv{DDE_GEN_CA, dir.string()};
  argv.insert(argv.end(), names.begin(), names.end());
  child_process p(argv, dir / "gen-ca.log");
  auto status = p.wait_exit(120s);
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
    throw std::runtime_error("deploy/gen-ca.sh failed:\n" + p.log());
  return cluster_certificates{dir};
}

tls_file_server start_tls_file_server(const fs::path& root, const test_certificates& certs,
                                      const fs::path& log_file) {
  tls_file_server s;
  s.port = free_port();
  // -WWW serves paths relative to the working directory.
  std::string command = "cd '" + root.string() +
                        "' && exec openssl s_server -quiet -WWW -accept 127.0.0.1:" + std::to_string(s.port) +
                        " -cert '" + certs.cert.string() + "' -key '" + certs.key.string() + "'";
  s.proc = std::make_unique<child_process>(std::vector<std::string>{"sh", "-c", command}, log_file);
  if (!wait_until([&] { return port_open(s.port); }, 20s))
    throw std::runtime_error("openssl s_server did not listen on " + std::to_string(s.port) + ":\n" +
                             s.proc->log());
  return s;
}

}  // namespace dde::test
