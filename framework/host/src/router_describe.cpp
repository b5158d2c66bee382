// A pool's description (GET /registry/system/{id}, the dashboard, ddectl): the thesis 3.2.2 shape of
// its spec, with the rate in force now, plus each worker's state and the pool's counters.
#include <boost/asio/post.hpp>

#include "router.hpp"

namespace dde::host {

nlohmann::json router::describe_workers() const {
  nlohmann::json workers = nlohmann::json::array();
  for (auto& w : flow_.ledger.snapshot()) {
    nlohmann::json entry = {{"id", w.id},
                            {"path", w.path},
                            {"inFlight", w.in_flight},
                            {"peakInFlight", flow_.ledger.peak_in_flight(w.index)},
                            {"done", flow_.slots[w.index].done},
                            {"state", worker_state(w.index)}};
    if (!flow_.slots[w.index].error.empty()) entry["error"] = flow_.slots[w.index].error;
    if (hot_.canary_on(w.index)) entry["canary"] = true;
    workers.push_back(std::move(entry));
  }
  return workers;
}

nlohmann::json router::describe_sub_pools() const {
  std::vector<std::string> in_flight;
  for (auto& [id, d] : flow_.deliveries) in_flight.push_back(d.sub_key);
  return flow_.held.describe(in_flight);
}

void router::describe(std::function<void(nlohmann::json)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] {
    const auto& r = *self;
    nlohmann::json j = to_json(r.pool_.spec);  // with the rate in force now
    j["pluginMd5"] = r.hot_.md5();
    j["workers"] = r.describe_workers();
    j["poolState"] = r.lifecycle_.state();
    if (r.pool_.spec.hot_deployment) {
      j["hotDeploy"] = r.hot_.describe();
    }
    if (!r.lifecycle_.last_error().empty()) j["lastError"] = r.lifecycle_.last_error();
    j["governance"] = r.governance_.describe();
    if (r.flow_.held.sub_pools()) j["subPoolState"] = r.describe_sub_pools();
    if (first_reply_wins(r.pool_.spec.router)) {
      auto race = r.first_reply_.counts();
      j["firstReply"] = {{"answered", race.answered},
                         {"dropped", race.dropped},
                         {"copies", race.copies},
                         {"chopped", race.chopped}};
    }
    if (r.scaling_.enabled()) r.scaling_.describe(j, r.active_workers());
    if (auto latency = r.figures_.latency(); !latency.empty()) j["latency"] = std::move(latency);
    j["stats"] = r.figures_.stats();
    fn(std::move(j));
  });
}

}  // namespace dde::host
