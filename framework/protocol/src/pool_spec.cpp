#include "dde/protocol/pool_spec.hpp"

#include <algorithm>
#include <cctype>
#include <type_traits>

#include "dde/net/http_client.hpp"
#include "dde/net/ws.hpp"

namespace dde {
std::string name_error(std::string_view key, const std::string& value) {
  if (valid_name(value)) return {};
  return "field \"" + std::string(key) + "\" is \"" + value +
         "\": names must be 1-100 characters from A-Z a-z 0-9 _ -";
}

bool is_remote_uri(std::string_view uri) {
  return uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0;
}

std::string pool_spec::plugin_path() const {
  constexpr std::string_view file = "file://";
  if (uri.compare(0, file.size(), file) == 0) return uri.substr(file.size());
  return uri;
}

std::string_view to_string(strategy s) {
  switch (s) {
    case strategy::resume: return "resume";
    case strategy::restart: return "restart";
    case strategy::stop: return "stop";
    case strategy::escalate: return "escalate";
  }
  return "restart";
}

nlohmann::json to_deploy_body(const pool_spec& spec) {
  auto body = to_json(spec);
  body.erase("id");
  body.erase("workersCount");
  body.erase("workerUri");
  body["uri"] = spec.uri;
  body["isolateSystemName"] = spec.system;
  body["isolateName"] = spec.isolate;
  return body;
}

const std::vector<std::string>& pool_spec_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> out;
    const auto body = to_deploy_body(pool_spec{});
    for (auto it = body.begin(); it != body.end(); ++it) out.push_back(it.key());
    std::sort(out.begin(), out.end());
    return out;
  }();
  return fields;
}

nlohmann::json deploy_body_of_description(const std::string& system, const nlohmann::json& described) {
  // The keys come from to_deploy_body itself: a field added to the spec cannot be forgotten here.
  auto id = described.value("id", std::string());
  nlohmann::json body = {{"isolateSystemName", system},
                         {"isolateName", id.substr(id.find('/') + 1)},
                         {"uri", described.value("workerUri", std::string())}};
  auto copy = [&](const std::string& key) {
    if (auto it = described.find(key); it != described.end() && !it->is_null() && !body.contains(key))
      body[key] = *it;
  };
  for (auto& field : pool_spec_fields()) copy(field);
  copy("messageQueuingSystemServer");  // describe names the pool's MQS when the host knows it
  return body;
}

nlohmann::json to_json(const pool_spec& spec) {
  return {
      {"id", spec.addr().str()},
      {"workerUri", spec.uri},
      {"sha256", spec.sha256.empty() ? nlohmann::json() : nlohmann::json(spec.sha256)},
      {"workersCount", spec.workers_paths.size()},
      {"workersPaths", spec.workers_paths},
      {"routerType", spec.router_type},
      {"hashKey", spec.hash_key.empty() ? nlohmann::json() : nlohmann::json(spec.hash_key)},
      {"partitions", spec.partitions.count
                         ? nlohmann::json{{"count", spec.partitions.count}, {"key", spec.partitions.key}}
                         : nlohmann::json()},
      {"tailChopDelayMs", spec.router == router_kind::tail_chopping
                              ? nlohmann::json(spec.tail_chop_delay.count())
                              : nlohmann::json()},
      {"hotDeployment", spec.hot_deployment},
      {"deliveryMode", std::string(to_string(spec.mode))},
      {"credits", spec.credits},
      {"hotDeploymentIntervalMs", spec.hot_interval.count()},
      {"rate", spec.rate_messages
                   ? nlohmann::json{{"messages", spec.rate_messages}, {"perMs", spec.rate_per.count()}}
                   : nlohmann::json()},
      {"maxInFlight", spec.max_in_flight ? nlohmann::json(spec.max_in_flight) : nlohmann::json()},
      {"pingAfterMs", spec.ping_after.count()},
      {"pongTimeoutMs", spec.pong_timeout.count()},
      {"supervision",
       {{"strategy", std::string(to_string(spec.supervision.kind))},
        {"maxRestarts", spec.supervision.max_restarts},
        {"withinMs", spec.supervision.within.count()},
        {"backoffMs", spec.supervision.backoff.count()},
        {"failedMessage", spec.supervision.dead_letter ? "dead-letter" : "retry"},
        {"maxFailures", spec.supervision.max_failures}}},
      {"backoff", {{"retryLimit", spec.backoff.retry_limit}, {"maxDelayMs", spec.backoff.max_delay.count()}}},
      {"retry", spec.retry.enabled() ? nlohmann::json{{"delays",
                                                       [&] {
                                                         auto out = nlohmann::json::array();
                                                         for (auto d : spec.retry.delays)
                                                           out.push_back(d.count());
                                                         return out;
                                                       }()}}
                                     : nlohmann::json()},
      {"subPools", spec.sub_pools.key.empty()
                       ? nlohmann::json()
                       : nlohmann::json{{"key", spec.sub_pools.key},
                                        {"capacity", spec.sub_pools.capacity},
                                        {"defaultCapacity", spec.sub_pools.default_capacity}}},
      {"scale", spec.scale.enabled() ? nlohmann::json{{"min", spec.scale.min},
                                                      {"max", spec.scale.max},
                                                      {"targetBacklogPerWorker", spec.scale.target_backlog},
                                                      {"cooldownMs", spec.scale.cooldown.count()},
                                                      {"sampleMs", spec.scale.sample.count()}}
                                     : nlohmann::json()},
      {"failover", spec.failover},
      {"canary", spec.canary.enabled() ? to_json(spec.canary) : nlohmann::json()},
      {"args", spec.args}};
}

}  // namespace dde
