#pragma once
// The registry's dead-letter endpoints: GET /registry/dlq/{system}/{pool} (list),
// GET /registry/dlq/{system}/{pool}/{id} (show one), POST .../replay and POST .../purge. The registry
// asks the nodes where the pool runs, takes that pool's MQS (messageQueuingSystemServer) and forwards
// to its HTTP endpoints (GET /dlq, POST /dlq/replay, POST /dlq/purge; mqs/PROTOCOL.md). Transport-free:
// the HTTP exchange with the MQS is a function the service gives (tests give a fake).

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "mqs_http.hpp"
#include "mqs_stats_client.hpp"
#include "rest_api.hpp"

namespace dde::registry {

/// True for the paths under /registry/dlq/.
bool is_dlq_path(std::string_view path);

/// Serves one request under /registry/dlq/; `reply` runs exactly once.
void handle_dlq(node_table& nodes, const mqs_http_fn& http, const rest_request& req, reply_fn reply);

}  // namespace dde::registry
