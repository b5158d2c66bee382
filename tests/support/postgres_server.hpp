#pragma once
// A throw-away PostgreSQL server for tests (the registry pair's shared store): its own data
// directory under the build tree, 127.0.0.1 on a free port, trust authentication for user "dde".
// PostgreSQL refuses to run as root: as root, initdb and postgres run as the system user "postgres"
// (the postgresql package's) through setpriv.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "dde_test.hpp"

namespace dde::test {

class postgres_server {
 public:
  /// Creates the cluster (initdb) in a fresh directory named after `name`; does not start it.
  explicit postgres_server(const std::string& name);
  ~postgres_server();  // stops it if running; the directory stays for post-mortems
  postgres_server(const postgres_server&) = delete;
  postgres_server& operator=(const postgres_server&) = delete;

  /// Starts the server and waits until it accepts connections.
  void start(std::chrono::milliseconds timeout = 30000ms);
  /// Fast shutdown (SIGINT): every session ends, and with it its advisory locks.
  void stop();
  bool running();
  std::uint16_t port() const { return port_; }
  /// postgresql://dde@127.0.0.1:<port>/postgres
  std::string url() const;

 private:
  std::vector<std::string> as_server_user(std::vector<std::string> argv) const;
  std::string log_tail() const;

  std::filesystem::path dir_, data_;
  std::uint16_t port_ = 0;
  std::unique_ptr<child_process> server_;
};

}  // namespace dde::test
