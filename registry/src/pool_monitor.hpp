#pragma once
// What the dashboard and GET /metrics show of the cluster: each round the service hands it every
// node's describe answer and the MQS figures of the pools' topics; it computes per-pool rates
// (messages in, out and sent per second from the routers' counters) and keeps a short history of them.
// Transport-free and single-threaded (the service calls it from its strand).

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dde/core/metrics.hpp"
#include "node_table.hpp"

namespace dde::registry {

/// One node's part of a round: its describe answer or why there is none.
struct node_sample {
  node_info info;
  std::optional<ordered_json> describe;  ///< the node's systems and pools
  std::string error;                     ///< when `describe` is empty
};

/// The figures one MQS gave for one topic (GET /topics of dde-mqs).
struct topic_sample {
  std::optional<double> queue_depth;
  std::optional<double> dead_letter_depth;
  double redelivered = 0;
  double published = 0;
};

class pool_monitor {
 public:
  using clock = std::chrono::steady_clock;
  /// `history` samples are kept per pool (one per round).
  explicit pool_monitor(std::size_t history = 300) : history_(history) {}

  /// The topics (`system.isolate`) of the last round's pools, by MQS URL: what to ask the MQSs.
  std::map<std::string, std::set<std::string>> topics_by_mqs() const;
  /// Takes a round: the nodes' answers and the MQS figures keyed by "mqsUrl topic".
  void update(clock::time_point now, std::vector<node_sample> nodes,
              const std::map<std::string, topic_sample>& topics, const std::string& mqs_error);

  /// The dashboard's view: nodes with their systems and pools, each pool with a `live` object.
  const ordered_json& snapshot() const { return snapshot_; }
  /// Sets the per-pool gauges and counters of `registry` from the last round.
  void export_metrics(metrics_registry& registry) const;

 private:
  struct pool_history {
    double delivered = 0, done = 0, sent = 0;
    clock::time_point at{};
    std::deque<std::array<double, 4>> samples;  ///< {seconds since start, in/s, out/s, sent/s}
    bool seen = false;
  };
  /// The pool's rates since its last round from its counters `stats` (none after a restart), kept
  /// in its history at `t` seconds: {"in", "out", "sent"} per second.
  ordered_json sample(pool_history& h, const ordered_json& stats, clock::time_point now, double t);
  /// The pool's recent rates as columns: {"t": [...], "in": [...], "out": [...], "sent": [...]}.
  static ordered_json history_of(const pool_history& h);

  std::size_t history_;
  std::optional<clock::time_point> started_;
  std::map<std::string, pool_history> pools_;  ///< by "node/system/isolate"
  ordered_json snapshot_ = ordered_json::object();
};

}  // namespace dde::registry
