#include "pool_applier.hpp"

#include <memory>

#include "dde/log.hpp"

namespace dde::registry {
namespace {

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

/// The state of one apply, kept alive by the callbacks of its steps.
struct apply_run {
  apply_run(node_table& n, apply_request r, reply_fn f) : nodes(n), req(std::move(r)), reply(std::move(f)) {}
  node_table& nodes;
  apply_request req;
  reply_fn reply;
  std::map<std::string, ordered_json> described;  ///< node id -> describe answer
  std::size_t describing = 0;
  std::string describe_error;
  int describe_status = 0;
  std::vector<apply_step> plan;
  std::size_t next = 0;
  ordered_json lines = ordered_json::array();
  int first_failure = 0;
  std::vector<std::string> failures;
};

void run_next(const std::shared_ptr<apply_run>& run);

ordered_json line_of(const apply_step& step) {
  ordered_json line = {{"pool", step.pool}, {"node", step.node}, {"action", to_string(step.action)}};
  if (!step.from.empty()) line["from"] = step.from;
  line["changed"] = step.changed;
  return line;
}

/// Records how the current step ended and goes on with the next.
void step_done(const std::shared_ptr<apply_run>& run, const node_answer& answer,
               const std::string& context = "") {
  auto& step = run->plan[run->next];
  auto line = line_of(step);
  if (answer) {
    line["result"] = "ok";
    registry_log()->info("apply {}: {} on node {}: ok", step.pool, to_string(step.action), step.node);
  } else {
    auto error = context + answer.error();
    line["result"] = "failed";
    line["error"] = error;
    if (!run->first_failure) run->first_failure = http_status(answer);
    run->failures.push_back(step.pool + ": " + error);
    registry_log()->warn("apply {}: {} on node {} failed ({}): {}", step.pool, to_string(step.action),
                         step.node, http_status(answer), error);
  }
  run->lines.push_back(std::move(line));
  ++run->next;
  run_next(run);
}

/// Sends one request of the current step; a node that left fails the step with 502.
void send(const std::shared_ptr<apply_run>& run, const std::string& node, protocol::node_request request,
          std::function<void(node_answer)> then) {
  if (!run->nodes.request(node, std::move(request), std::move(then)))
    step_done(run, http_failure<ordered_json>(502, "node " + node + " is not connected"));
}

void finish(const std::shared_ptr<apply_run>& run) {
  std::map<std::string, int> summary;
  for (auto& line : run->lines)
    ++summary[line.value("result", "") == "failed" ? std::string("failed")
                                                   : line.value("action", std::string())];
  ordered_json body = {
      {"dryRun", run->req.dry_run}, {"pools", run->lines}, {"summary", ordered_json(summary)}};
  if (run->failures.empty()) return run->reply({200, std::move(body), {}});
  std::string error = std::to_string(run->failures.size()) + " of " + std::to_string(run->plan.size()) +
                      " pools could not be applied";
  for (auto& f : run->failures) error += "; " + f;
  body["error"] = error;
  run->reply({run->first_failure, std::move(body), {}});
}

void run_next(const std::shared_ptr<apply_run>& run) {
  if (run->next == run->plan.size()) return finish(run);
  auto& step = run->plan[run->next];
  auto done = [run](node_answer a) { step_done(run, a); };
  if (run->req.dry_run || step.action == apply_action::unchanged) {
    auto line = line_of(step);
    line["result"] = run->req.dry_run ? "planned" : "ok";
    run->lines.push_back(std::move(line));
    ++run->next;
    return run_next(run);
  }
  const auto slash = step.pool.find('/');
  const std::string system = step.pool.substr(0, slash), isolate = step.pool.substr(slash + 1);
  switch (step.action) {
    case apply_action::create: return send(run, step.node, protocol::node::deploy{step.body}, done);
    case apply_action::redeploy: return send(run, step.node, protocol::node::redeploy{step.body}, done);
    case apply_action::configure: {
      auto given = [&](const char* key) {
        return step.body.contains(key) ? step.body[key] : ordered_json(ordered_json::value_t::discarded);
      };
      return send(run, step.node,
                  protocol::node::set_rate{system, isolate, given("rate"), given("maxInFlight")}, done);
    }
    case apply_action::move: {
      // Deployed where the file wants it first; shut down where it ran only once that worked.
      auto from = step.from;
      return send(
          run, step.node, protocol::node::deploy{step.body}, [run, from, system, isolate](node_answer a) {
            if (!a) return step_done(run, a, "deploying it failed, nothing was shut down: ");
            send(run, from, protocol::node::shutdown{system, isolate}, [run, from](node_answer s) {
              step_done(run, s,
                        "it runs on the new node, but shutting it down on node " + from + " failed: ");
            });
          });
    }
    case apply_action::unchanged: break;
  }
}

void planned(const std::shared_ptr<apply_run>& run) {
  if (!run->describe_error.empty())
    return run->reply(error_reply(run->describe_status, run->describe_error + "; nothing was applied"));
  run->plan = plan_apply(run->req.pools, pools_by_address(run->described));
  run_next(run);
}

}  // namespace

void apply_pools(node_table& nodes, apply_request req, reply_fn reply) {
  // Nodes named by name become ids, so that a pool is compared with what that node describes.
  for (auto& pool : req.pools) {
    auto id = nodes.resolve(pool.bootstrapper_id);
    if (id.empty())
      return reply(error_reply(
          404, "pool " + pool.spec.addr().str() + ": unknown bootstrapperId \"" + pool.bootstrapper_id +
                   "\" (no connected node has that id or that name); nothing was applied"));
    pool.bootstrapper_id = id;
  }
  auto run = std::make_shared<apply_run>(nodes, std::move(req), std::move(reply));
  auto all = nodes.list();
  run->describing = all.size() + 1;
  auto described = [run] {
    if (--run->describing == 0) planned(run);
  };
  for (auto& node : all) {
    auto id = node.id;
    bool sent = nodes.request(id, protocol::node::describe{}, [run, id, described](node_answer a) {
      if (a && a.value().is_object()) {
        run->described[id] = std::move(a.value());
      } else if (run->describe_error.empty()) {
        run->describe_status = a ? 502 : http_status(a);
        run->describe_error = "cannot describe node " + id + ": " + (a ? "not a JSON object" : a.error());
      }
      described();
    });
    if (!sent) --run->describing;  // it left in between: it runs nothing
  }
  described();
}

}  // namespace dde::registry
