#include "rest_api.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

#include "dde/core/metrics.hpp"
#include "dde/log.hpp"
#include "dde/net/target.hpp"
#include "dlq_api.hpp"
#include "pool_applier.hpp"
#include "pool_mover.hpp"
#include "rest_validation.hpp"
#include "web_assets.hpp"

namespace dde::registry {
namespace {

/// Who answers a route.
enum class endpoint {
  list,
  show,
  deploy,
  shutdown,
  rate,
  restart,
  kill,
  migrate,
  apply,
  health,
  failover,
  dlq,
  dashboard,  ///< answered by the dashboard before the API is asked (GET and HEAD)
  websocket,  ///< an upgrade goes to its WebSocket handler; a plain request is answered 426
};

struct route_entry {
  std::string_view method;
  std::string_view path;
  endpoint by;
};

// The thesis's four first, in its order; the dashboard's files follow from web_assets().
constexpr route_entry api_routes[] = {
    {"GET", "/registry/system/list", endpoint::list},
    {"GET", "/registry/system/{bootstrapperId}", endpoint::show},
    {"POST", "/registry/deploy", endpoint::deploy},
    {"POST", "/registry/system/shutdown", endpoint::shutdown},
    {"POST", "/registry/system/rate", endpoint::rate},
    {"POST", "/registry/system/restart", endpoint::restart},
    {"POST", "/registry/system/kill", endpoint::kill},
    {"POST", "/registry/migrate", endpoint::migrate},
    {"POST", "/registry/apply", endpoint::apply},
    {"GET", "/registry/health", endpoint::health},
    {"GET", "/registry/failover", endpoint::failover},
    {"GET", "/registry/status", endpoint::dashboard},
    {"GET", "/registry/dlq/{system}/{pool}", endpoint::dlq},
    {"GET", "/registry/dlq/{system}/{pool}/{id}", endpoint::dlq},
    {"POST", "/registry/dlq/{system}/{pool}/replay", endpoint::dlq},
    {"POST", "/registry/dlq/{system}/{pool}/purge", endpoint::dlq},
    {"GET", "/metrics", endpoint::dashboard},
    {"GET", "/health", endpoint::dashboard},
    {"GET", "/", endpoint::dashboard},
    {"GET", "/registry", endpoint::websocket},
    {"GET", "/dashboard/live", endpoint::websocket},
};

struct route_table {
  std::vector<rest_route> routes;
  std::vector<endpoint> served_by;  ///< beside `routes`
};

const route_table& table() {
  static const route_table t = [] {
    route_table out;
    auto add = [&](std::string_view method, std::string_view path, endpoint by) {
      out.routes.push_back({std::string(method), std::string(path)});
      out.served_by.push_back(by);
    };
    for (const auto& r : api_routes) add(r.method, r.path, r.by);
    for (const auto& asset : web_assets()) add("GET", asset.path, endpoint::dashboard);
    return out;
  }();
  return t;
}

/// How many segments of `pattern` match `path` literally (a `{name}` segment matches any non-empty
/// one), or -1 when `path` does not match.
int match(std::string_view pattern, std::string_view path) {
  int literal = 0;
  while (true) {
    auto p_end = std::min(pattern.find('/'), pattern.size());
    auto s_end = std::min(path.find('/'), path.size());
    auto p = pattern.substr(0, p_end);
    auto s = path.substr(0, s_end);
    if (p.size() > 1 && p.front() == '{' && p.back() == '}') {
      if (s.empty()) return -1;
    } else if (p != s) {
      return -1;
    } else {
      ++literal;
    }
    if (p_end == pattern.size() || s_end == path.size())
      return p_end == pattern.size() && s_end == path.size() ? literal : -1;
    pattern.remove_prefix(p_end + 1);
    path.remove_prefix(s_end + 1);
  }
}

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

rest_reply from_answer(node_answer answer) {
  if (!answer) return error_reply(http_status(answer), answer.error());
  if (answer.value().is_null()) answer.value() = ordered_json::object();
  return {200, std::move(answer.value()), {}};
}

}  // namespace

const std::vector<rest_route>& rest_routes() { return table().routes; }

rest_reply error_reply(int status, std::string message) {
  return {status, {{"error", std::move(message)}}, {}};
}

rest_reply unknown_node_reply(const std::string& id) {
  return error_reply(404, "unknown bootstrapperId \"" + id +
                              "\": no connected node has that id or that name, or several share the name "
                              "(GET /registry/system/list)");
}

rest_api::rest_api(node_table& nodes, std::chrono::steady_clock::time_point started)
    : nodes_(nodes), started_(started) {}

void rest_api::handle(const rest_request& req, reply_fn reply) {
  const std::string path(net::target_path(req.target));
  // The most literal routes whose path matches: /registry/system/list, not /registry/system/{bootstrapperId}.
  const auto& t = table();
  int best = -1;
  std::optional<std::size_t> hit;
  std::string allowed;
  for (std::size_t i = 0; i < t.routes.size(); ++i) {
    int literal = match(t.routes[i].path, path);
    if (literal < 0 || literal < best) continue;
    if (literal > best) {
      best = literal;
      hit.reset();
      allowed.clear();
    }
    if (t.routes[i].method == req.method) hit = i;
    if (allowed.find(t.routes[i].method) == std::string::npos)
      allowed += (allowed.empty() ? "" : ", ") + t.routes[i].method;
  }
  if (hit) return serve(*hit, req, path, std::move(reply));
  // The dead-letter paths say precisely what is wrong with a request no route takes.
  if (is_dlq_path(path)) return handle_dlq(nodes_, mqs_http_, req, std::move(reply));
  if (best >= 0) {
    rest_reply r =
        error_reply(405, "method " + req.method + " is not allowed on " + path + "; use " + allowed);
    r.headers["Allow"] = allowed;
    return reply(std::move(r));
  }
  std::string served;
  for (const auto& r : t.routes) served += (served.empty() ? "" : ", ") + r.method + " " + r.path;
  reply(error_reply(404, "unknown path \"" + path + "\"; the registry serves " + served));
}

void rest_api::serve(std::size_t route, const rest_request& req, const std::string& path, reply_fn reply) {
  auto with_body = [&](auto&& run, bool arrays_too = false) {
    auto body = parse_body(req.body, arrays_too);
    if (!body) {
      registry_log()->info("{} {} from {} refused: {}", req.method, path, req.remote, body.error());
      return reply(error_reply(400, body.error()));
    }
    run(body.value());
  };
  switch (table().served_by[route]) {
    case endpoint::list: return list(reply);
    case endpoint::show: return show(path.substr(path.rfind('/') + 1), reply);
    case endpoint::deploy: return with_body([&](const ordered_json& b) { deploy(b, reply); });
    case endpoint::shutdown: return with_body([&](const ordered_json& b) { shutdown(b, reply); });
    case endpoint::rate: return with_body([&](const ordered_json& b) { set_rate(b, reply); });
    case endpoint::restart: return with_body([&](const ordered_json& b) { restart(b, reply); });
    case endpoint::kill: return with_body([&](const ordered_json& b) { kill(b, reply); });
    case endpoint::migrate: return with_body([&](const ordered_json& b) { migrate(b, reply); });
    case endpoint::apply: return with_body([&](const ordered_json& b) { apply(b, reply); }, true);
    case endpoint::health: return health(reply);
    case endpoint::failover:
      if (!failover_status_) return reply(error_reply(404, "this registry does not watch its nodes"));
      return reply({200, failover_status_(), {}});
    case endpoint::dlq: return handle_dlq(nodes_, mqs_http_, req, std::move(reply));
    case endpoint::dashboard:
      return reply(error_reply(500, req.method + " " + path + " reached the REST API, not the dashboard"));
    case endpoint::websocket: {
      auto r = error_reply(426, path + " is a WebSocket endpoint: connect with a WebSocket client");
      r.headers["Upgrade"] = "websocket";
      return reply(std::move(r));
    }
  }
}

void rest_api::list(const reply_fn& reply) {
  auto body = ordered_json::array();
  for (auto& node : nodes_.list()) body.push_back(to_json(node));
  reply({200, std::move(body), {}});
}

void rest_api::health(const reply_fn& reply) {
  auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_);
  ordered_json body = {{"status", "ok"}, {"nodes", nodes_.size()}, {"uptimeSeconds", up.count()}};
  if (role_status_) body.update(role_status_());
  reply({200, std::move(body), {}});
}

void rest_api::show(const std::string& id, const reply_fn& reply) {
  bool sent = nodes_.request(id, protocol::node::describe{}, [reply, id](node_answer answer) {
    if (answer && !answer.value().is_object()) {
      registry_log()->warn("node {} answered describe with {}", id, answer.value().dump());
      return reply(
          error_reply(502, "node " + id + " answered \"describe\" with something other than a JSON object"));
    }
    reply(from_answer(std::move(answer)));
  });
  if (!sent) reply(unknown_node_reply(id));
}

void rest_api::deploy(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_deploy(body);
  if (!parsed) {
    registry_log()->info("deploy refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& d = parsed.value();
  auto what = d.spec.addr().str();
  auto id = d.bootstrapper_id;
  bool sent = nodes_.request(id, protocol::node::deploy{d.body}, [reply, id, what](node_answer answer) {
    metrics_registry::process()
        .counter("dde_registry_deploys_total",
                 "Deploys a node answered, by result (a plugin that does not load fails).",
                 {{"result", answer ? "ok" : "failed"}})
        .add();
    if (answer)
      registry_log()->info("deploy {} on node {}: ok {}", what, id, answer.value().dump());
    else
      registry_log()->warn("deploy {} on node {} failed ({}): {}", what, id, http_status(answer),
                           answer.error());
    reply(from_answer(std::move(answer)));
  });
  if (!sent) {
    registry_log()->info("deploy {} refused: unknown bootstrapperId {}", what, id);
    reply(unknown_node_reply(id));
  }
}

void rest_api::forward(const std::string& id, protocol::node_request request, const std::string& what,
                       const reply_fn& reply) {
  std::string action(protocol::action_of(request));
  bool sent = nodes_.request(id, std::move(request), [reply, id, action, what](node_answer answer) {
    if (answer)
      registry_log()->info("{} {} on node {}: ok", action, what, id);
    else
      registry_log()->warn("{} {} on node {} failed ({}): {}", action, what, id, http_status(answer),
                           answer.error());
    reply(from_answer(std::move(answer)));
  });
  if (!sent) {
    registry_log()->info("{} {} refused: unknown bootstrapperId {}", action, what, id);
    reply(unknown_node_reply(id));
  }
}

void rest_api::shutdown(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_shutdown(body);
  if (!parsed) {
    registry_log()->info("shutdown refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& s = parsed.value();
  auto what = s.isolate ? s.system + "/" + *s.isolate : "isolate system " + s.system;
  forward(s.bootstrapper_id, protocol::node::shutdown{s.system, s.isolate}, what, reply);
}

void rest_api::restart(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_shutdown(body);
  if (parsed && !parsed.value().isolate)
    parsed = result<shutdown_request>::failure("missing field \"isolateName\"");
  if (!parsed) {
    registry_log()->info("restart refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& s = parsed.value();
  forward(s.bootstrapper_id, protocol::node::restart{s.system, *s.isolate}, s.system + "/" + *s.isolate,
          reply);
}

void rest_api::kill(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_kill(body);
  if (!parsed) {
    registry_log()->info("kill refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& k = parsed.value();
  auto what =
      k.system + "/" + k.isolate + (k.worker_id ? " worker " + *k.worker_id : std::string(", every worker"));
  forward(k.bootstrapper_id, protocol::node::kill{k.system, k.isolate, k.worker_id}, what, reply);
}

void rest_api::set_rate(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_shutdown(body);
  if (parsed && !parsed.value().isolate)
    parsed = result<shutdown_request>::failure("missing field \"isolateName\"");
  if (parsed) {
    // The same rules as in a deploy body, so a bad limit never reaches a node.
    auto probe =
        nlohmann::json{{"isolateSystemName", parsed.value().system}, {"isolateName", "x"}, {"uri", "x"}};
    for (auto key : {"rate", "maxInFlight"})
      if (body.contains(key)) probe[key] = nlohmann::json::parse(body[key].dump());
    auto spec = dde::parse_pool_spec(probe);
    if (!spec) parsed = result<shutdown_request>::failure(spec.error());
  }
  if (!parsed) {
    registry_log()->info("rate change refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& s = parsed.value();
  auto given = [&](const char* key) {
    return body.contains(key) ? body[key] : ordered_json(ordered_json::value_t::discarded);
  };
  forward(s.bootstrapper_id,
          protocol::node::set_rate{s.system, *s.isolate, given("rate"), given("maxInFlight")},
          s.system + "/" + *s.isolate, reply);
}

void rest_api::migrate(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_migrate(body);
  if (!parsed) {
    registry_log()->info("migrate refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& m = parsed.value();
  if (m.to_bootstrapper_id) return move_pool(nodes_, m, reply);
  forward(m.bootstrapper_id, protocol::node::migrate{m.system, m.isolate, *m.workers_paths},
          m.system + "/" + m.isolate, reply);
}

void rest_api::apply(const ordered_json& body, const reply_fn& reply) {
  auto parsed = parse_apply(body);
  if (!parsed) {
    registry_log()->info("apply refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  apply_pools(nodes_, std::move(parsed.value()), reply);
}

}  // namespace dde::registry
