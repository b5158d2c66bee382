#pragma once
// The REST API of the registry (thesis 3.2.2 plus DDE's additions), as a domain object: it reads a
// request, checks it, asks nodes through the node_table and answers once through a callback.
// Transport-free, so tests call it directly.

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mqs_http.hpp"
#include "node_table.hpp"

namespace dde::registry {

/// One HTTP request, as the transport read it.
struct rest_request {
  std::string method;
  std::string target;  ///< path and query
  std::string body;
  std::string remote;  ///< "ip:port" of the caller, for the log
};

/// The answer: a JSON body (errors are `{"error": "..."}`) with its status.
struct rest_reply {
  int status = 200;
  ordered_json body;
  std::map<std::string, std::string> headers;
};

/// One endpoint of the registry's port: a method and a path in which `{name}` stands for one segment.
struct rest_route {
  std::string method;
  std::string path;
};

/// Every endpoint of the registry's port: the REST API's, those the dashboard answers before the API
/// (its page and files, /metrics, /health, /registry/status, the OpenAPI document and the pool spec's
/// schema) and the two WebSocket endpoints (a plain request to one is answered 426). A request takes
/// the route whose path matches with the most literal segments (/registry/system/list, not
/// /registry/system/{bootstrapperId}). GET /openapi.json documents exactly these; tests hold the two
/// together.
const std::vector<rest_route>& rest_routes();

/// A reply carrying `{"error": message}`.
rest_reply error_reply(int status, std::string message);

/// 404 for a bootstrapperId no connected node has.
rest_reply unknown_node_reply(const std::string& id);

using reply_fn = std::function<void(rest_reply)>;

class rest_api {
 public:
  explicit rest_api(node_table& nodes,
                    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now());

  /// What `GET /registry/failover` answers (the node watch's status).
  void set_failover_status(std::function<ordered_json()> fn) { failover_status_ = std::move(fn); }
  /// Fields `GET /registry/health` adds (the registry's role: active or standby, and its store).
  void set_role_status(std::function<ordered_json()> fn) { role_status_ = std::move(fn); }
  /// How the dead-letter endpoints (/registry/dlq/...) reach an MQS; without it they answer 503.
  void set_mqs_http(mqs_http_fn fn) { mqs_http_ = std::move(fn); }
  /// Handles `req`; `reply` runs exactly once, now or when the nodes asked have answered.
  void handle(const rest_request& req, reply_fn reply);

 private:
  /// Answers `req`, which matched rest_routes()[route].
  void serve(std::size_t route, const rest_request& req, const std::string& path, reply_fn reply);
  void list(const reply_fn& reply);
  void show(const std::string& id, const reply_fn& reply);
  void deploy(const ordered_json& body, const reply_fn& reply);
  void shutdown(const ordered_json& body, const reply_fn& reply);
  void restart(const ordered_json& body, const reply_fn& reply);
  void kill(const ordered_json& body, const reply_fn& reply);
  void set_rate(const ordered_json& body, const reply_fn& reply);
  /// Sends `request` to node `id` and answers with the node's answer, logging both.
  void forward(const std::string& id, protocol::node_request request, const std::string& what,
               const reply_fn& reply);
  void migrate(const ordered_json& body, const reply_fn& reply);
  /// POST /registry/apply: makes the cluster run the pools of the body (see pool_applier).
  void apply(const ordered_json& body, const reply_fn& reply);
  void health(const reply_fn& reply);

  node_table& nodes_;
  std::chrono::steady_clock::time_point started_;
  std::function<ordered_json()> failover_status_;
  std::function<ordered_json()> role_status_;
  mqs_http_fn mqs_http_;
};

}  // namespace dde::registry
