#include "rest_api.hpp"

#include "dde/log.hpp"
#include "dlq_api.hpp"
#include "dde/metrics.hpp"
#include "dde/net/target.hpp"
#include "pool_applier.hpp"
#include "pool_mover.hpp"
#include "rest_validation.hpp"

namespace dde::registry {
namespace {

constexpr const char* endpoints =
    "GET /registry/system/list, GET /registry/system/{bootstrapperId}, POST /registry/deploy, "
    "POST /registry/system/shutdown, POST /registry/system/restart, POST /registry/system/kill, "
    "POST /registry/system/rate, POST /registry/migrate, POST /registry/apply, GET /registry/status, GET /registry/health, "
    "GET /registry/dlq/{system}/{pool}[/{id}], POST /registry/dlq/{system}/{pool}/replay|purge, GET / (the dashboard), GET /metrics, "
    "GET /health";

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

rest_reply from_answer(node_answer answer) {
  if (!answer) return error_reply(http_status(answer), answer.error());
  if (answer.value().is_null()) answer.value() = ordered_json::object();
  return {200, std::move(answer.value()), {}};
}

}  // namespace

rest_reply error_reply(int status, std::string message) {
  return {status, {{"error", std::move(message)}}, {}};
}

rest_reply unknown_node_reply(const std::string& id) {
  return error_reply(
      404, "unknown bootstrapperId \"" + id +
               "\": no connected node has that id or that name, or several share the name (GET /registry/system/list)");
}

rest_api::rest_api(node_table& nodes, std::chrono::steady_clock::time_point started)
    : nodes_(nodes), started_(started) {}

void rest_api::handle(const rest_request& req, reply_fn reply) {
  const std::string path(net::target_path(req.target));
  auto only = [&](const char* method, auto&& run) {
    if (req.method == method) return run();
    rest_reply r =
        error_reply(405, "method " + req.method + " is not allowed on " + path + "; use " + method);
    r.headers["Allow"] = method;
    reply(std::move(r));
  };
  auto with_body = [&](auto&& run, bool arrays_too = false) {
    auto body = parse_body(req.body, arrays_too);
    if (!body) {
      registry_log()->info("{} {} from {} refused: {}", req.method, path, req.remote, body.error());
      return reply(error_reply(400, body.error()));
    }
    run(body.value());
  };

  if (path == "/registry/system/list") return only("GET", [&] { list(reply); });
  if (path == "/registry/health") return only("GET", [&] { health(reply); });
  if (path == "/registry/failover" && failover_status_)
    return only("GET", [&] { reply({200, failover_status_(), {}}); });
  if (path == "/registry/deploy")
    return only("POST", [&] { with_body([&](const ordered_json& b) { deploy(b, reply); }); });
  if (path == "/registry/system/shutdown")
    return only("POST", [&] { with_body([&](const ordered_json& b) { shutdown(b, reply); }); });
  if (path == "/registry/system/rate")
    return only("POST", [&] { with_body([&](const ordered_json& b) { set_rate(b, reply); }); });
  if (path == "/registry/system/restart")
    return only("POST", [&] { with_body([&](const ordered_json& b) { restart(b, reply); }); });
  if (path == "/registry/system/kill")
    return only("POST", [&] { with_body([&](const ordered_json& b) { kill(b, reply); }); });
  if (path == "/registry/migrate")
    return only("POST", [&] { with_body([&](const ordered_json& b) { migrate(b, reply); }); });
  // GET /registry/status is the dashboard's (its rounds measure the rates); other methods end here.
  if (path == "/registry/status") return only("GET", [&] { reply(error_reply(500, "GET /registry/status reached the REST API")); });
  if (path == "/registry/apply")
    return only("POST", [&] { with_body([&](const ordered_json& b) { apply(b, reply); }, true); });
  if (is_dlq_path(path)) return handle_dlq(nodes_, mqs_http_, req, std::move(reply));
  constexpr std::string_view system_prefix = "/registry/system/";
  if (path.size() > system_prefix.size() && path.compare(0, system_prefix.size(), system_prefix) == 0 &&
      path.find('/', system_prefix.size()) == std::string::npos) {
    std::string id = path.substr(system_prefix.size());
    return only("GET", [&] { show(id, reply); });
  }
  reply(error_reply(404, "unknown path \"" + path + "\"; the registry serves " + endpoints));
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
        .counter("dde_registry_deploys_total", "Deploys a node answered, by result (a plugin that does not load fails).",
                 {{"result", answer ? "ok" : "failed"}})
        .add();
    if (answer)
      registry_log()->info("deploy {} on node {}: ok {}", what, id, answer.value().dump());
    else
      registry_log()->warn("deploy {} on node {} failed ({}): {}", what, id, http_status(answer), answer.error());
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
      registry_log()->warn("{} {} on node {} failed ({}): {}", action, what, id, http_status(answer), answer.error());
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
  if (parsed && !parsed.value().isolate) parsed = result<shutdown_request>::failure("missing field \"isolateName\"");
  if (!parsed) {
    registry_log()->info("restart refused: {}", parsed.error());
    return reply(error_reply(400, parsed.error()));
  }
  const auto& s = parsed.value();
  forward(s.bootstrapper_id, protocol::node::restart{s.system, *s.isolate}, s.system + "/" + *s.isolate, reply);
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
  if (parsed && !parsed.value().isolate) parsed = result<shutdown_request>::failure("missing field \"isolateName\"");
  if (parsed) {
    // The same rules as in a deploy body, so a bad limit never reaches a node.
    auto probe = nlohmann::json{{"isolateSystemName", parsed.value().system}, {"isolateName", "x"}, {"uri", "x"}};
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
  forward(s.bootstrapper_id, protocol::node::set_rate{s.system, *s.isolate, given("rate"), given("maxInFlight")},
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
