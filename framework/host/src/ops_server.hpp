#pragma once
// The isolate system's own operational endpoints on 127.0.0.1 (`--ops-port`): `GET /metrics`, its
// pools' figures in the Prometheus text format, and `GET /health`, not ready while the MQS link is
// down. Both read the counters the routers and the top level keep anyway (on their strands, per
// request), so the message path pays nothing for them.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "dde/core/metrics.hpp"
#include "dde/net/ws.hpp"
#include "top_level.hpp"

namespace dde::host {

class controller;

struct ops_server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0 picks a free port
  std::string system;
  std::string instance;
  std::string mqs;
};

class ops_server {
 public:
  ops_server(boost::asio::io_context& io, std::shared_ptr<controller> ctrl, std::shared_ptr<top_level> top,
             ops_server_options options);
  ~ops_server();
  /// Listens; throws std::runtime_error when the port cannot be bound.
  void start();
  void stop();
  /// The port it listens on (after start).
  std::uint16_t port() const;

 private:
  void handle(const net::http_request& req, std::function<void(net::http_response)> respond);

  std::unique_ptr<net::server> server_;
  std::shared_ptr<controller> controller_;
  std::shared_ptr<top_level> top_;
  ops_server_options options_;
};

/// Adds the figures of `pools` (a controller's describe: `{system: [pool, ...]}`) and of the MQS link
/// (`link`) to `out` as `dde_host_*` families.
void add_host_metrics(metrics_registry& out, const nlohmann::json& pools, const top_level_stats& link);

}  // namespace dde::host
