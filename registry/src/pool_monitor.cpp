#include "pool_monitor.hpp"

#include <cmath>

namespace dde::registry {
namespace {

double number(const ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

double round2(double v) { return std::round(v * 100) / 100; }

std::string topic_of(const std::string& system, const ordered_json& pool) {
  auto id = pool.value("id", std::string());  // "system/isolate"
  auto slash = id.find('/');
  return system + "." + (slash == std::string::npos ? id : id.substr(slash + 1));
}

double in_flight(const ordered_json& pool) {
  double n = 0;
  if (auto w = pool.find("workers"); w != pool.end() && w->is_array())
    for (auto& worker : *w) n += number(worker, "inFlight");
  return n;
}

}  // namespace

std::map<std::string, std::set<std::string>> pool_monitor::topics_by_mqs() const {
  std::map<std::string, std::set<std::string>> out;
  for (auto& node : snapshot_.value("nodes", ordered_json::array()))
    for (auto& system : node["systems"])
      for (auto& pool : system["pools"])
        if (auto mqs = pool.value("messageQueuingSystemServer", std::string()); !mqs.empty())
          out[mqs].insert(topic_of(system["name"].get<std::string>(), pool));
  return out;
}

ordered_json pool_monitor::sample(pool_history& h, const ordered_json& stats, clock::time_point now,
                                  double t) {
  double delivered = number(stats, "delivered"), done = number(stats, "done"), sent = number(stats, "sent");
  double rate_in = 0, rate_out = 0, rate_sent = 0;
  double dt = std::chrono::duration<double>(now - h.at).count();
  // A counter that went back is a restarted pool: no rate from that round.
  if (h.at != clock::time_point{} && dt > 0 && delivered >= h.delivered && done >= h.done && sent >= h.sent) {
    rate_in = (delivered - h.delivered) / dt;
    rate_out = (done - h.done) / dt;
    rate_sent = (sent - h.sent) / dt;
  }
  h.delivered = delivered;
  h.done = done;
  h.sent = sent;
  h.at = now;
  h.seen = true;
  h.samples.push_back({t, round2(rate_in), round2(rate_out), round2(rate_sent)});
  while (h.samples.size() > history_) h.samples.pop_front();
  return {{"in", round2(rate_in)}, {"out", round2(rate_out)}, {"sent", round2(rate_sent)}};
}

ordered_json pool_monitor::history_of(const pool_history& h) {
  auto history = ordered_json{{"t", ordered_json::array()},
                              {"in", ordered_json::array()},
                              {"out", ordered_json::array()},
                              {"sent", ordered_json::array()}};
  for (auto& s : h.samples) {
    history["t"].push_back(s[0]);
    history["in"].push_back(s[1]);
    history["out"].push_back(s[2]);
    history["sent"].push_back(s[3]);
  }
  return history;
}

void pool_monitor::update(clock::time_point now, std::vector<node_sample> nodes,
                          const std::map<std::string, topic_sample>& topics, const std::string& mqs_error) {
  if (!started_) started_ = now;
  const double t = round2(std::chrono::duration<double>(now - *started_).count());
  for (auto& [key, h] : pools_) h.seen = false;

  auto out_nodes = ordered_json::array();
  for (auto& n : nodes) {
    ordered_json node = to_json(n.info);
    node["health"] = n.describe ? "ok" : "unreachable";
    if (!n.describe) node["error"] = n.error;
    auto systems = ordered_json::array();
    if (n.describe)
      for (auto& [name, pools] : n.describe->items()) {
        ordered_json system = {{"name", name}, {"pools", ordered_json::array()}};
        for (auto& pool : pools) {
          for (auto key : {"state", "pid", "restarts", "lastExit"})
            if (pool.contains(key) && !system.contains(key)) system[key] = pool[key];
          auto& h = pools_[n.info.id + "/" + pool.value("id", std::string())];
          auto live = sample(h, pool.value("stats", ordered_json::object()), now, t);
          live["inFlight"] = in_flight(pool);
          auto governance = pool.value("governance", ordered_json::object());
          live["deadLettered"] = number(governance, "deadLettered");
          auto mqs = pool.value("messageQueuingSystemServer", std::string());
          if (auto it = topics.find(mqs + " " + topic_of(name, pool)); it != topics.end()) {
            if (it->second.queue_depth) live["queueDepth"] = *it->second.queue_depth;
            if (it->second.dead_letter_depth) live["deadLetterDepth"] = *it->second.dead_letter_depth;
            live["redelivered"] = it->second.redelivered;
            live["published"] = it->second.published;
          }
          live["history"] = history_of(h);
          auto entry = pool;
          entry["topic"] = topic_of(name, pool);
          entry["live"] = std::move(live);
          system["pools"].push_back(std::move(entry));
        }
        systems.push_back(std::move(system));
      }
    node["systems"] = std::move(systems);
    out_nodes.push_back(std::move(node));
  }
  std::erase_if(pools_, [](auto& p) { return !p.second.seen; });
  snapshot_ = {{"uptimeSeconds", t}, {"nodes", std::move(out_nodes)}};
  if (!mqs_error.empty()) snapshot_["mqsError"] = mqs_error;
}

namespace {

/// One pool's series, labelled `l`, from its entry in a node's report.
void export_pool(metrics_registry& r, const metric_labels& l, const ordered_json& pool) {
  auto stats = pool.value("stats", ordered_json::object());
  auto live = pool.value("live", ordered_json::object());
  auto hot = pool.value("hotDeploy", ordered_json::object());
  r.counter("dde_pool_messages_in_total", "Messages the pool's router received.", l)
      .set(number(stats, "delivered"));
  r.counter("dde_pool_messages_out_total", "Messages the pool's workers finished (done).", l)
      .set(number(stats, "done"));
  r.counter("dde_pool_failed_total", "Messages whose handling threw.", l).set(number(stats, "failed"));
  r.counter("dde_pool_worker_restarts_total", "Worker restarts by supervision.", l)
      .set(number(stats, "restarts"));
  r.counter("dde_pool_hot_swaps_total", "Plugin versions swapped in by hot deployment.", l)
      .set(number(hot, "swaps"));
  r.gauge("dde_pool_plugin_refused", "1 while the last new plugin version failed to load.", l)
      .set(hot.value("state", std::string()) == "refused" ? 1 : 0);
  r.counter("dde_pool_dead_lettered_total", "Messages the router dead-lettered.", l)
      .set(number(live, "deadLettered"));
  r.gauge("dde_pool_in_flight", "Messages held by the pool's workers.", l).set(number(live, "inFlight"));
  r.gauge("dde_pool_workers", "Workers of the pool.", l).set(number(pool, "workersCount"));
  r.gauge("dde_pool_rate_in", "Messages in per second (last round).", l).set(number(live, "in"));
  r.gauge("dde_pool_rate_out", "Messages out per second (last round).", l).set(number(live, "out"));
  if (live.contains("queueDepth"))
    r.gauge("dde_pool_queue_messages", "Messages waiting in the pool's queue in the broker.", l)
        .set(number(live, "queueDepth"));
  if (live.contains("deadLetterDepth"))
    r.gauge("dde_pool_dead_letter_queue_messages", "Messages in the pool's dead-letter queue.", l)
        .set(number(live, "deadLetterDepth"));
  if (live.contains("redelivered"))
    r.counter("dde_pool_redelivered_total", "Messages the broker redelivered on the pool's topic (per MQS).",
              l)
        .set(number(live, "redelivered"));
}

}  // namespace

void pool_monitor::export_metrics(metrics_registry& r) const {
  static const char* pool_families[] = {"dde_pool_messages_in_total",
                                        "dde_pool_messages_out_total",
                                        "dde_pool_failed_total",
                                        "dde_pool_worker_restarts_total",
                                        "dde_pool_hot_swaps_total",
                                        "dde_pool_plugin_refused",
                                        "dde_pool_dead_lettered_total",
                                        "dde_pool_in_flight",
                                        "dde_pool_workers",
                                        "dde_pool_queue_messages",
                                        "dde_pool_dead_letter_queue_messages",
                                        "dde_pool_redelivered_total",
                                        "dde_pool_rate_in",
                                        "dde_pool_rate_out",
                                        "dde_system_restarts_total"};
  for (auto name : pool_families) r.clear(name);
  r.gauge("dde_registry_nodes", "Nodes registered.")
      .set(double(snapshot_.value("nodes", ordered_json::array()).size()));
  for (auto& node : snapshot_.value("nodes", ordered_json::array()))
    for (auto& system : node["systems"]) {
      auto sys = system["name"].get<std::string>();
      metric_labels sl = {{"node", node.value("name", std::string())}, {"system", sys}};
      r.counter("dde_system_restarts_total", "Restarts of the isolate system by its activator.", sl)
          .set(number(system, "restarts"));
      for (auto& pool : system["pools"])
        export_pool(
            r, {{"node", node.value("name", std::string())}, {"pool", pool.value("topic", std::string())}},
            pool);
    }
}

}  // namespace dde::registry
