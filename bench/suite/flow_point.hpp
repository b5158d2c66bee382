#pragma once
// One point of a filled queue drained, ours and the raw client's, and the median of several runs:
// what experiment 1 measures on the suite's cluster and experiment 10 on the path users run.
#include <algorithm>
#include <array>
#include <vector>

#include "experiments.hpp"

namespace dde::bench {

/// One producer fills a queue (production measured at the broker), then consumers drain it; the
/// raw baseline does the same.
struct flow_point {
  production produced;
  double consumed = 0;
  double consumed_steady = 0;  ///< after the consumers' first second
  double broker_us = 0;        ///< the broker's CPU µs per message while ours consumed
  double rested_s = 0;  ///< from the filled queue to our consumers' start: the raw consumers rest as long
  raw_flow raw;
  long payload_bytes = -1;  ///< of the first message our producers left in the queue
};

/// The median of `v` (the upper one of an even count; 0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// `runs` runs of `point`, ours and raw alternating; each figure is the median of its runs.
template <class Point>
flow_point median_of_runs(int runs, Point point) {
  auto figures = [](flow_point& f) {
    return std::array<double*, 12>{&f.produced.at_isolates,
                                   &f.produced.at_broker,
                                   &f.consumed,
                                   &f.raw.produce,
                                   &f.raw.produce_client,
                                   &f.raw.consume,
                                   &f.raw.consume_best,
                                   &f.broker_us,
                                   &f.raw.broker_us_best,
                                   &f.consumed_steady,
                                   &f.raw.consume_best_steady,
                                   &f.rested_s};
  };
  std::vector<flow_point> all;
  for (int i = 0; i < runs; ++i) all.push_back(point());
  flow_point out;
  for (std::size_t k = 0; k < figures(out).size(); ++k) {
    std::vector<double> v;
    for (auto& f : all) v.push_back(*figures(f)[k]);
    *figures(out)[k] = median(std::move(v));
  }
  out.payload_bytes = all.front().payload_bytes;
  return out;
}

/// "ALO" or "AMO", as progress lines name a delivery mode.
inline std::string short_mode(const std::string& mode) { return mode == "at-least-once" ? "ALO" : "AMO"; }

/// Messages per consumption point of `mode`, `prefetch` and message `size`.
long consume_count(const suite_context& ctx, const std::string& mode, int prefetch, int size = 64);

/// Producers fill a fresh queue of `c` through the pools, the consumers drain it once it rested
/// (backlog_rest), then the raw client does the same on the same broker.
flow_point fill_then_consume(suite_context& ctx, cluster_api& c, const std::string& mode, int prefetch,
                             int mqs_count, int producers, int consumers, int size, long n);

}  // namespace dde::bench
