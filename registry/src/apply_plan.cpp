#include "apply_plan.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace dde::registry {
namespace {

using r_apply = result<apply_request>;

/// Fields of a deploy body that say where and how it is sent, not what the pool is.
bool is_request_field(const std::string& key) {
  return key == "bootstrapperId" || key == "action" || key == "isolateSystemName" || key == "isolateName";
}

bool is_rate_field(const std::string& key) { return key == "rate" || key == "maxInFlight"; }

/// A pool as it runs: its deploy body (its description's spec and its MQS) and that body parsed.
struct running_pool {
  ordered_json body;
  dde::pool_spec spec;
};

/// The pool `p` describes, or nothing when its description cannot be read back.
std::optional<running_pool> running_body(const described_pool& p) {
  auto body = deploy_body_of_description(p.system, nlohmann::json(p.entry));
  auto spec = dde::parse_pool_spec(body);
  if (!spec) return std::nullopt;
  return running_pool{ordered_json::parse(body.dump()), std::move(spec.value())};
}

/// The fields `want` gives that differ from the running pool `have`, in `want`'s order.
std::vector<std::string> differences(const deploy_request& want, const running_pool& have) {
  std::vector<std::string> out;
  auto want_norm = to_deploy_body(want.spec);
  auto have_norm = to_deploy_body(have.spec);
  for (auto& [key, value] : want.body.items()) {
    if (is_request_field(key)) continue;
    if (key == "messageQueuingSystemServer") {
      if (have.body.value(key, std::string()) != want.mqs) out.push_back(key);
      continue;
    }
    // An elastic pool's describe shows the workers it scaled to, not the paths it was given.
    if (key == "workersPaths" && want.spec.scale.enabled() && have.spec.scale.enabled()) continue;
    if (!want_norm.contains(key)) continue;  // not part of the spec (parse_deploy refused unknown ones)
    auto theirs = have_norm.find(key);
    if (theirs == have_norm.end() || *theirs != want_norm[key]) out.push_back(key);
  }
  return out;
}

/// `have` with every field `want` gives: what the pool becomes (fields the file leaves out stay).
ordered_json merged(const deploy_request& want, ordered_json have, const std::string& node) {
  for (auto& [key, value] : want.body.items()) have[key] = value;
  have["bootstrapperId"] = node;
  have["action"] = add_isolate_action;
  return have;
}

}  // namespace

result<apply_request> parse_apply(const ordered_json& body) {
  apply_request out;
  const ordered_json* pools = &body;
  if (body.is_object()) {
    for (auto& [key, value] : body.items())
      if (key != "pools" && key != "dryRun")
        return r_apply::failure("unknown field \"" + key +
                                "\": an apply body is {\"pools\": [...], \"dryRun\": false}");
    auto it = body.find("pools");
    if (it == body.end()) return r_apply::failure("missing field \"pools\", the array of deploy bodies");
    pools = &*it;
    if (auto dry = body.find("dryRun"); dry != body.end()) {
      if (!dry->is_boolean()) return r_apply::failure("field \"dryRun\" must be true or false");
      out.dry_run = dry->get<bool>();
    }
  }
  if (!pools->is_array())
    return r_apply::failure("the pools to apply must be an array of deploy bodies (or {\"pools\": [...]})");
  if (pools->empty()) return r_apply::failure("no pools to apply: the array is empty");
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < pools->size(); ++i) {
    auto entry = (*pools)[i];
    auto where = "pools[" + std::to_string(i) + "]";
    if (entry.is_object() && !entry.contains("action")) entry["action"] = add_isolate_action;
    auto parsed = parse_deploy(entry);
    if (!parsed) return r_apply::failure(where + ": " + parsed.error());
    auto address = parsed.value().spec.addr().str();
    if (auto [it, fresh] = seen.emplace(address, i); !fresh)
      return r_apply::failure(where + ": pool " + address + " is already pools[" +
                              std::to_string(it->second) + "]; a pool is applied once");
    out.pools.push_back(std::move(parsed.value()));
  }
  return out;
}

std::map<std::string, std::vector<described_pool>> pools_by_address(
    const std::map<std::string, ordered_json>& describes) {
  std::map<std::string, std::vector<described_pool>> out;
  for (auto& [node, described] : describes) {
    if (!described.is_object()) continue;
    for (auto& [system, pools] : described.items()) {
      if (!pools.is_array()) continue;
      for (auto& pool : pools) {
        auto id = pool.is_object() ? pool.value("id", std::string()) : std::string();
        if (!id.empty()) out[id].push_back({node, system, pool});
      }
    }
  }
  return out;
}

std::string_view to_string(apply_action a) {
  switch (a) {
    case apply_action::create: return "create";
    case apply_action::unchanged: return "unchanged";
    case apply_action::configure: return "configure";
    case apply_action::redeploy: return "redeploy";
    case apply_action::move: return "move";
  }
  return "?";
}

std::vector<apply_step> plan_apply(const std::vector<deploy_request>& desired,
                                   const std::map<std::string, std::vector<described_pool>>& running) {
  std::vector<apply_step> plan;
  for (auto& want : desired) {
    apply_step step;
    step.pool = want.spec.addr().str();
    step.node = want.bootstrapper_id;
    auto found = running.find(step.pool);
    const described_pool* here = nullptr;
    const described_pool* elsewhere = nullptr;
    if (found != running.end())
      for (auto& p : found->second) {
        if (p.node == step.node) here = &p;
        if (p.node != step.node && !elsewhere) elsewhere = &p;
      }
    if (!here && !elsewhere) {
      step.action = apply_action::create;
      step.body = merged(want, ordered_json::object(), step.node);
      plan.push_back(std::move(step));
      continue;
    }
    const auto& current = here ? *here : *elsewhere;
    auto running = running_body(current);
    // A description that cannot be read back: deploy the file's pool over it.
    step.changed =
        running ? differences(want, *running) : std::vector<std::string>{"(unreadable description)"};
    auto have = running ? std::move(running->body) : ordered_json::object();
    if (!here) {
      step.action = apply_action::move;
      step.from = current.node;
    } else if (step.changed.empty()) {
      step.action = apply_action::unchanged;
    } else if (std::all_of(step.changed.begin(), step.changed.end(), is_rate_field)) {
      step.action = apply_action::configure;
      step.body = ordered_json::object();
      for (auto& key : step.changed) step.body[key] = want.body[key];
    } else {
      step.action = apply_action::redeploy;
    }
    if (step.action == apply_action::move || step.action == apply_action::redeploy)
      step.body = merged(want, have, step.node);
    plan.push_back(std::move(step));
  }
  return plan;
}

}  // namespace dde::registry
