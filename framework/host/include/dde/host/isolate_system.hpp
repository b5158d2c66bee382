#pragma once
// One isolate system: its thread pool, top level (MQS link) and controller (pools).

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dde/core/net/elastic_threads.hpp"
#include "dde/protocol/pool_spec.hpp"

namespace dde::host {

class control_link;
class controller;
class ops_server;
class top_level;

struct isolate_system_options {
  std::string name;
  std::string mqs_url = "ws://127.0.0.1:42043/mqs";
  std::string instance;  ///< empty: a new UUID
  int threads = 2;       ///< at most this many run the pools; the first alone until it lags
  std::chrono::microseconds thread_lag{1000};  ///< what lagging is (elastic_threads); 0: all run always
  std::size_t window = 4096;
  /// A pool with credit out and no delivery this long while messages wait is stalled (top_level_options).
  std::chrono::milliseconds stall_timeout{30000};
  std::string control_url;  ///< the node activator's /control endpoint; empty: run alone
  std::string
      plugin_cache;     ///< copies of plugin versions that worked (with control_url), and http(s) downloads
  std::string ca_file;  ///< https plugin URIs: trust this CA file instead of the system store
  std::vector<std::string>
      plugin_allow;  ///< plugins only from these directories or URL prefixes (empty: any)
  std::chrono::milliseconds orphan_timeout{120000};
  int ops_port = -1;  ///< /metrics and /health on 127.0.0.1 at this port (0: a free one; -1: none)
  std::function<void(const std::string&)> request_stop;  ///< how the control link ends the process
};

class isolate_system {
 public:
  explicit isolate_system(isolate_system_options options);
  ~isolate_system();

  /// Starts the threads and the MQS link (which retries in the background until it connects).
  void start();
  /// Deploys a pool and waits for the outcome: empty string on success, else the error.
  std::string add_pool(pool_spec spec);
  std::string remove_pool(const std::string& isolate);
  nlohmann::json describe();
  /// Stops every pool (in-flight messages finish), waits for confirms, closes the link, joins threads.
  void stop();

  const std::string& instance() const { return options_.instance; }
  /// The port of /metrics and /health (after start), 0 without one.
  std::uint16_t ops_port() const;
  boost::asio::io_context& io() { return io_; }

 private:
  isolate_system_options options_;
  boost::asio::io_context io_;
  std::shared_ptr<top_level> top_;
  std::shared_ptr<controller> controller_;
  std::shared_ptr<control_link> control_;
  std::unique_ptr<ops_server> ops_;
  std::unique_ptr<net::elastic_threads> threads_;
  std::filesystem::path temp_downloads_;  ///< removed at stop: downloads without a plugin cache
  bool stopped_ = false;
};

}  // namespace dde::host
