#pragma once
// The MQS's counters per topic and per broker connection, in the process's metrics_registry.
// Thread-safe: the enqueuer and dequeuer threads count, GET /metrics and GET /topics read.

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "dde/core/metrics.hpp"

namespace dde::mqs {

/// The cells of one topic (stable references).
struct topic_counters {
  metric_cell& published;    ///< at-least-once: confirmed by the broker; at-most-once: handed to it
  metric_cell& consumed;     ///< delivered to a host
  metric_cell& acked;        ///< acked to the broker after the host's ack
  metric_cell& redelivered;  ///< delivered with the broker's redelivered flag
  metric_cell& consumers;    ///< gauge: the broker consumers this MQS holds on the topic's queue
  metric_cell& leases;       ///< deliveries held past --lease-ms, copied to the lease queue
  metric_cell& stalls;       ///< times the stall watch found its consumer stalled and consumed it afresh
  metric_cell& returned;     ///< deliveries given back to the queue: a host's nack, cancel or disconnect
  metric_cell& republished;  ///< published again, marked, after a nack or a connection lost unconfirmed
};

class mqs_metrics {
 public:
  explicit mqs_metrics(metrics_registry& registry) : registry_(registry) {}
  /// The MQS metrics of this process.
  static mqs_metrics& process();

  /// The counters of topic `name` (label `pool`), created at 0 on first use.
  topic_counters& topic(const std::string& name);
  /// Every topic counted so far.
  std::vector<std::string> topics();
  /// A reconnect of the `publish` or `consume` connection.
  void reconnected(const char* connection);
  /// Gauge: the broker connections open to `node` (host:port), created at 0 on first use.
  metric_cell& broker_connections(const std::string& node);
  /// Every node connected to so far, with its open connections now.
  std::vector<std::pair<std::string, int>> connections_per_node();
  metrics_registry& registry() { return registry_; }

 private:
  metrics_registry& registry_;
  std::mutex mutex_;
  std::unordered_map<std::string, topic_counters> topics_;
  std::vector<std::pair<std::string, metric_cell*>> nodes_;
};

/// One thread's lookups of topic counters, without the lock: a broker thread counts every message
/// it moves, and mqs_metrics::topic() takes a mutex and hashes the name each time. The counters
/// themselves are shared (atomic); topics are never forgotten, so the cached references stay valid.
class topic_counter_cache {
 public:
  explicit topic_counter_cache(mqs_metrics& metrics = mqs_metrics::process()) : metrics_(metrics) {}
  topic_counters& operator()(const std::string& topic) {
    auto it = cache_.find(topic);
    if (it == cache_.end()) it = cache_.emplace(topic, &metrics_.topic(topic)).first;
    return *it->second;
  }

 private:
  mqs_metrics& metrics_;
  std::unordered_map<std::string, topic_counters*> cache_;
};

}  // namespace dde::mqs
