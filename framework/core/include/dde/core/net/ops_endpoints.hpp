#pragma once
/// \file
/// The operational endpoints every daemon serves beside its own API: `GET /metrics` (Prometheus
/// text format) and `GET /health` (ready or not, with the reason).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dde/core/metrics.hpp"
#include "dde/net/ws.hpp"

namespace dde::net {

/// Whether a daemon can do its job now.
struct readiness {
  bool ready = true;
  /// Ready, but part of the work is stuck (status "degraded", still 200): `reason` says which.
  bool degraded = false;
  std::string reason;  ///< why not or why degraded (e.g. "broker 127.0.0.1:5672 unreachable: ...")
  nlohmann::json details = nlohmann::json::object();  ///< merged into the body
};

/// 200 `{"status":"ready","daemon":...}` or 503 `{"status":"not ready","reason":...}`.
http_response health_response(std::string_view daemon, const readiness& state);

/// 200 with `registry` rendered (adds `process_resident_memory_bytes`), `text/plain; version=0.0.4`.
http_response metrics_response(metrics_registry& registry);

/// True for GET requests on `path` (the query ignored).
bool is_get(const http_request& req, std::string_view path);

}  // namespace dde::net
