#pragma once
// One node's activator: the System Bootstrapper, the Isolate Deployer (`/activator`) and the
// control endpoint its isolate systems attach to (`/control`), on one port.

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrapper.hpp"
#include "dde/net/ws.hpp"
#include "system_manager.hpp"

namespace dde::activator {

struct activator_options {
  std::string listen = "127.0.0.1";
  std::uint16_t port = 42042;
  std::string registry = "ws://127.0.0.1:8000/registry";
  std::string name;            ///< node name (default: hostname)
  std::string advertise_host;  ///< host in the registration (default: --listen)
  manager_options manager;     ///< control_url is filled in from listen/port
  int threads = 2;
  std::string cluster_secret;  ///< required of /activator and /control links (empty: open)
  net::tls_options tls;        ///< listen with https/wss when tls.cert_file is set
};

class activator {
 public:
  explicit activator(activator_options options);
  ~activator();
  /// Binds and starts; throws std::runtime_error when the port cannot be bound.
  void start();
  /// Stops the isolate systems (their pools drain), then the links; joins the threads.
  void stop();

 private:
  /// GET /health and GET /metrics.
  net::http_response ops(const net::http_request& req);

  activator_options options_;
  boost::asio::io_context io_;
  std::unique_ptr<net::server> server_;
  std::shared_ptr<system_manager> systems_;
  std::shared_ptr<bootstrapper> bootstrapper_;
  std::vector<std::thread> threads_;
};

}  // namespace dde::activator
