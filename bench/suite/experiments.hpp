#pragma once
// The experiments of thesis section 5.2, each a function filling one table (two for request-reply),
// and the recovery (8) and memory (9) experiments.
#include <map>
#include <string>
#include <vector>

#include "measure.hpp"
#include "report.hpp"

namespace dde::bench {

/// What every experiment shares: the cluster, --quick, progress, and the headline figures the
/// summary checks against its targets (e.g. "consume.at-most-once.p64.c1.ours").
struct suite_context {
  bench_cluster& cluster;
  bool quick;
  progress clock;
  std::map<std::string, double> headline;
  int point = 0;
  std::string points;  ///< --points: only the points of experiments 1, 4, 6 and 7 whose label holds this

  /// Whether the point labelled `label` (as its progress line begins, e.g. "exp1 AMO prefetch 64
  /// consumers 1:") runs.
  bool wants(const std::string& label) const {
    return points.empty() || label.find(points) != std::string::npos;
  }

  /// A fresh system name and stats directory for the next point, its pools on `mqs`.
  setup next(const std::string& mode, std::vector<std::string> mqs);
  /// `count` MQS URLs with `prefetch`.
  std::vector<std::string> mqs(int prefetch, int count);
};

inline const std::vector<std::string> delivery_modes{"at-most-once", "at-least-once"};

table exp1_consumers(suite_context& ctx);
table exp2_message_size(suite_context& ctx);
table exp3_mqs_scaling(suite_context& ctx);
table exp4_production(suite_context& ctx);
table exp5_simultaneous(suite_context& ctx);
/// Request-reply throughput (exp 6) and, from the same runs, round-trip times (exp 7).
std::vector<table> exp6_7_request_reply(suite_context& ctx);
/// Recovery: how soon consuming resumes after a broker restart and after an MQS kill.
table exp8_recovery(suite_context& ctx);
/// Experiment 1's prefetch-64 points on a cluster deploy/cluster.sh started, driven with ddectl.
table exp10_public_path(suite_context& ctx);
/// End-to-end latency at half the maximum rate, ours and raw's (latency.cpp).
table exp11_latency(suite_context& ctx);
/// Resident memory: each daemon's, idle and under the consumption targets' load (memory.cpp).
table exp9_memory(suite_context& ctx);

}  // namespace dde::bench
