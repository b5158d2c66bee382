#pragma once
// One node's activator: the System Bootstrapper, the Isolate Deployer (`/activator`) and the
// control endpoint its isolate systems attach to (`/control`), on one port.

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dde/net/ws.hpp"

namespace dde::activator {

class bootstrapper;
class system_manager;

/// How the node runs its isolate systems (dde-activator's --host-* options, among others).
struct manager_options {
  std::string host_binary;  ///< dde-isolate-system
  std::string control_url;  ///< what children connect to: ws://127.0.0.1:PORT/control
  std::string log_dir;      ///< children's logs: <log_dir>/<system>.log
  std::string log_level = "info";
  std::chrono::milliseconds start_timeout{15000};
  std::chrono::milliseconds request_timeout{15000};
  /// A deploy (or a migration) is refused unless its isolate system is linked to its MQS within this
  /// long (below request_timeout, so the system's answer comes first). Redeploys after a restart wait.
  std::chrono::milliseconds mqs_link_timeout{10000};
  std::chrono::milliseconds orphan_timeout{120000};
  std::chrono::milliseconds restart_backoff{500};
  int host_threads = 2;
  std::chrono::microseconds host_thread_lag{1000};  ///< the systems' --thread-lag-us
  std::string host_scheduling = "batch";            ///< the systems' --scheduling
  std::vector<std::string> plugin_allow;            ///< handed to each isolate system as --plugin-allow
};

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

/// The URLs of a --registry list ("ws://a:8000/registry,ws://b:8000/registry"), in order; throws
/// std::invalid_argument naming the one that is not a ws:// or wss:// URL, or an empty list.
std::vector<net::ws_url> parse_registry_urls(const std::string& list);

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
