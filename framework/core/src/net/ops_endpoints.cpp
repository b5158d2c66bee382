#include "dde/core/net/ops_endpoints.hpp"

#include "dde/net/target.hpp"

namespace dde::net {

http_response health_response(std::string_view daemon, const readiness& state) {
  http_response out;
  // Status first, for people reading it with curl.
  const char* status = !state.ready ? "not ready" : state.degraded ? "degraded" : "ready";
  nlohmann::ordered_json body = {{"status", status}, {"daemon", daemon}};
  if (!state.ready || state.degraded) body["reason"] = state.reason;
  for (auto& [key, value] : state.details.items()) body[key] = nlohmann::ordered_json::parse(value.dump());
  out.status = state.ready ? 200 : 503;
  out.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.headers["Cache-Control"] = "no-store";
  return out;
}

http_response metrics_response(metrics_registry& registry) {
  add_process_metrics(registry);
  http_response out;
  out.content_type = "text/plain; version=0.0.4; charset=utf-8";
  out.body = registry.render();
  out.headers["Cache-Control"] = "no-store";
  return out;
}

bool is_get(const http_request& req, std::string_view path) {
  return req.method == "GET" && target_path(req.target) == path;
}

}  // namespace dde::net
