#include "pool_mover.hpp"

#include <algorithm>
#include <memory>

#include "dde/log.hpp"

namespace dde::registry {
namespace {

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

/// The state of one move, kept alive by the callbacks of its steps.
struct move {
  node_table& nodes;
  migrate_request req;
  reply_fn reply;
  std::string what;  ///< "system/isolate"
  ordered_json deploy_result;

  void fail(int status, const std::string& error) {
    registry_log()->warn("migrate {} from node {} to node {} failed ({}): {}", what, req.bootstrapper_id,
                         *req.to_bootstrapper_id, status, error);
    reply(error_reply(status, error));
  }
};

/// Sends one step; a node that left in between fails the move with 502.
void step(const std::shared_ptr<move>& m, const std::string& node, protocol::node_request request,
          std::function<void(node_answer)> next) {
  if (!m->nodes.request(node, std::move(request), std::move(next)))
    m->fail(502, "node " + node + " disconnected during the migration of " + m->what);
}

void do_shutdown(const std::shared_ptr<move>& m) {
  const auto& from = m->req.bootstrapper_id;
  const auto& to = *m->req.to_bootstrapper_id;
  step(m, from, protocol::node::shutdown{m->req.system, m->req.isolate}, [m, from, to](node_answer answer) {
    if (!answer)
      return m->fail(http_status(answer), "pool " + m->what + " now runs on node " + to +
                                              ", but shutting it down on node " + from +
                                              " failed: " + answer.error());
    registry_log()->info("migrate {} from node {} to node {}: ok", m->what, from, to);
    ordered_json body = {{"from", from},
                         {"to", to},
                         {"deploy", std::move(m->deploy_result)},
                         {"shutdown", answer.value().is_null() ? ordered_json::object() : answer.value()}};
    m->reply({200, std::move(body), {}});
  });
}

void do_deploy(const std::shared_ptr<move>& m, const ordered_json& body) {
  const auto& to = *m->req.to_bootstrapper_id;
  step(m, to, protocol::node::deploy{body}, [m, to](node_answer answer) {
    if (!answer)
      return m->fail(http_status(answer), "deploying " + m->what + " on node " + to +
                                              " failed, nothing was shut down: " + answer.error());
    m->deploy_result = answer.value().is_null() ? ordered_json::object() : std::move(answer.value());
    do_shutdown(m);
  });
}

void on_describe(const std::shared_ptr<move>& m, node_answer answer) {
  const auto& from = m->req.bootstrapper_id;
  if (!answer) return m->fail(http_status(answer), "cannot describe node " + from + ": " + answer.error());
  const ordered_json* entry = nullptr;
  if (answer.value().is_object()) {
    auto system = answer.value().find(m->req.system);
    if (system != answer.value().end() && system->is_array())
      for (auto& pool : *system)
        if (pool.is_object() && pool.value("id", ordered_json()) == m->what) entry = &pool;
  }
  if (!entry) return m->fail(404, "no pool \"" + m->what + "\" on node " + from);
  auto body = redeploy_body(*entry, m->req.system, *m->req.to_bootstrapper_id);
  if (!body)
    return m->fail(502, "node " + from + " described pool " + m->what + " incompletely: " + body.error());
  if (m->req.workers_paths) body.value()["workersPaths"] = *m->req.workers_paths;
  if (auto checked = parse_deploy(body.value()); !checked)
    return m->fail(502, "node " + from + " described pool " + m->what +
                            " with a spec that cannot be deployed: " + checked.error());
  do_deploy(m, body.value());
}

}  // namespace

result<ordered_json> redeploy_body(const ordered_json& entry, const std::string& system,
                                   const std::string& target) {
  using r = result<ordered_json>;
  if (!entry.is_object()) return r::failure("the pool entry is not a JSON object");
  auto id_field = entry.find("id");
  std::string id = id_field != entry.end() && id_field->is_string() ? id_field->get<std::string>() : "";
  auto slash = id.find('/');
  if (slash == std::string::npos)
    return r::failure("the pool entry has no \"id\" of the form system/isolate");
  auto mqs = entry.find("messageQueuingSystemServer");
  if (mqs == entry.end() || !mqs->is_string()) return r::failure("it has no \"messageQueuingSystemServer\"");
  auto uri = entry.find("workerUri");
  if (uri == entry.end() || !uri->is_string()) return r::failure("it has no \"workerUri\"");
  ordered_json body = {{"bootstrapperId", target},
                       {"action", add_isolate_action},
                       {"messageQueuingSystemServer", *mqs},
                       {"isolateSystemName", system},
                       {"isolateName", id.substr(slash + 1)},
                       {"uri", *uri}};
  // Then every other field of the spec the node reported (rates, supervision, ...), in its order; what
  // describes the running pool rather than its spec (stats, state, workers, pid, ...) stays behind.
  const auto& spec_fields = pool_spec_fields();
  for (auto& [key, value] : entry.items())
    if (std::binary_search(spec_fields.begin(), spec_fields.end(), key) && !body.contains(key) &&
        !value.is_null())
      body[key] = value;
  return body;
}

void move_pool(node_table& nodes, const migrate_request& req, reply_fn reply) {
  const auto& to = *req.to_bootstrapper_id;
  if (!nodes.find(req.bootstrapper_id)) return reply(unknown_node_reply(req.bootstrapper_id));
  if (!nodes.find(to))
    return reply(
        error_reply(404, "unknown toBootstrapperId \"" + to +
                             "\": no connected node has that id or that name, or several share the name (GET "
                             "/registry/system/list)"));
  auto m =
      std::make_shared<move>(move{nodes, req, std::move(reply), req.system + "/" + req.isolate, nullptr});
  step(m, req.bootstrapper_id, protocol::node::describe{},
       [m](node_answer answer) { on_describe(m, std::move(answer)); });
}

}  // namespace dde::registry
