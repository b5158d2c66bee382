#include "mqs_metrics.hpp"

namespace dde::mqs {

mqs_metrics& mqs_metrics::process() {
  static mqs_metrics metrics(metrics_registry::process());
  return metrics;
}

topic_counters& mqs_metrics::topic(const std::string& name) {
  std::lock_guard lock(mutex_);
  if (auto it = topics_.find(name); it != topics_.end()) return it->second;
  // "pool", as the isolate systems' and the registry's per-pool series: a topic is a pool's address
  // in topic form (system.isolate), the value they use too.
  metric_labels l = {{"pool", name}};
  auto& r = registry_;
  return topics_
      .emplace(
          name,
          topic_counters{
              r.counter("dde_mqs_published_total", "Messages published to the broker, per topic.", l),
              r.counter("dde_mqs_consumed_total", "Messages delivered to isolate systems, per topic.", l),
              r.counter("dde_mqs_acked_total", "Messages acked to the broker, per topic.", l),
              r.counter("dde_mqs_redelivered_total",
                        "Messages the broker delivered again (redelivered flag), per topic.", l),
              r.gauge("dde_mqs_topic_consumers",
                      "Broker consumers this MQS holds on the topic's queue (one per worker pulling it).", l),
              r.counter("dde_mqs_leases_renewed_total",
                        "At-least-once deliveries held past --lease-ms and renewed through the lease queue, "
                        "per topic.",
                        l),
              r.counter(
                  "dde_mqs_consumer_stalls_total",
                  "Times the topic's hosts held credit and its queue had ready messages while its consumer "
                  "got nothing for --stall-timeout-ms (then consumed on a fresh connection).",
                  l),
              r.counter(
                  "dde_mqs_returned_total",
                  "Deliveries isolate systems gave back to the queue (a nack with requeue, or held by a "
                  "host that cancelled or went away), per topic. The broker delivers them again, flagged.",
                  l),
              r.counter("dde_mqs_republished_total",
                        "Messages published again because the broker nacked them or the connection was lost "
                        "before their confirm, per topic. The copy, and the first if the broker kept it, are "
                        "delivered flagged redelivered.",
                        l)})
      .first->second;
}

std::vector<std::string> mqs_metrics::topics() {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (auto& [name, c] : topics_) out.push_back(name);
  return out;
}

void mqs_metrics::reconnected(const char* connection) {
  registry_
      .counter("dde_mqs_broker_reconnects_total", "Reconnects to the broker after a lost connection.",
               {{"connection", connection}})
      .add();
}

metric_cell& mqs_metrics::broker_connections(const std::string& node) {
  std::lock_guard lock(mutex_);
  for (auto& [name, cell] : nodes_)
    if (name == node) return *cell;
  auto& cell = registry_.gauge(
      "dde_mqs_broker_connections",
      "Broker connections open (publishing, consuming, one per consumed topic), per node.", {{"node", node}});
  nodes_.emplace_back(node, &cell);
  return cell;
}

std::vector<std::pair<std::string, int>> mqs_metrics::connections_per_node() {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, int>> out;
  for (auto& [name, cell] : nodes_) out.emplace_back(name, int(cell->value()));
  return out;
}

}  // namespace dde::mqs
