// Experiment 10: experiment 1's prefetch-64 points on the path users run (deploy/cluster.sh and
// ddectl, public_cluster.hpp), each next to the raw client on that cluster's broker in the same run.
#include "flow_point.hpp"
#include "public_cluster.hpp"

namespace dde::bench {
namespace {

/// The point's progress label, which --points matches.
std::string label_of(const std::string& mode, int consumers) {
  return "exp10 " + short_mode(mode) + " prefetch 64 consumers " + std::to_string(consumers) + ":";
}

}  // namespace

table exp10_public_path(suite_context& ctx) {
  table t{
      "exp10_public_path",
      "The path users run: a cluster started with `deploy/cluster.sh up --prefetch 64` (one activator "
      "node, one MQS, the script's flags), a producer pool filling a queue with 64 B messages and a "
      "consumer pool (credits 64) draining it, each deployed and stopped with `ddectl`; the raw client "
      "on the same broker in the same rounds (columns as in exp1_consumers; each figure the median of "
      "3 alternating runs, 1 with --quick; produce_*: the producer pool's fill at the broker against "
      "the raw client's publishing with the same confirms)",
      {"mode", "consumers", "messages", "ours_msg_s", "raw_best_msg_s", "raw_each_msg_s", "ratio_best",
       "ratio_each", "steady_ours_msg_s", "steady_raw_best_msg_s", "steady_ratio_best", "ours_produce_msg_s",
       "raw_produce_msg_s", "produce_ratio", "broker_us_ours", "broker_us_raw_best", "rested_s"}};
  constexpr int prefetch = 64;
  struct point {
    std::string mode;
    int consumers;
  };
  const std::vector<point> points = ctx.quick ? std::vector<point>{{"at-most-once", 1}, {"at-most-once", 4}}
                                              : std::vector<point>{{"at-most-once", 1},
                                                                   {"at-most-once", 4},
                                                                   {"at-most-once", 16},
                                                                   {"at-least-once", 1},
                                                                   {"at-least-once", 4}};
  std::vector<point> wanted;
  for (auto& p : points)
    if (ctx.wants(label_of(p.mode, p.consumers))) wanted.push_back(p);
  if (wanted.empty()) return t;
  ctx.clock.line("exp10: deploy/cluster.sh up --prefetch 64");
  public_cluster cluster(test::fresh_dir("bench-public"), prefetch);
  for (auto& [mode, consumers] : wanted) {
    const long n = consume_count(ctx, mode, prefetch);
    auto f = median_of_runs(ctx.quick ? 1 : 3, [&, mode = mode, consumers = consumers] {
      return fill_then_consume(ctx, cluster, mode, prefetch, 1, 1, consumers, 64, n);
    });
    t.add({mode, std::to_string(consumers), std::to_string(n), num(f.consumed), num(f.raw.consume_best),
           num(f.raw.consume), ratio(f.consumed, f.raw.consume_best), ratio(f.consumed, f.raw.consume),
           num(f.consumed_steady), num(f.raw.consume_best_steady),
           ratio(f.consumed_steady, f.raw.consume_best_steady), num(f.produced.at_broker), num(f.raw.produce),
           ratio(f.produced.at_broker, f.raw.produce), num(f.broker_us, 1), num(f.raw.broker_us_best, 1),
           num(f.rested_s, 1)});
    const auto key = "public.consume." + mode + ".c" + std::to_string(consumers);
    ctx.headline[key + ".ours"] = f.consumed;
    ctx.headline[key + ".raw"] = f.raw.consume_best;
    ctx.headline[key + ".raw_each"] = f.raw.consume;
    ctx.headline[key + ".ours_steady"] = f.consumed_steady;
    ctx.headline[key + ".raw_steady"] = f.raw.consume_best_steady;
    if (consumers == 1) {
      ctx.headline["public.produce." + mode + ".ours"] = f.produced.at_broker;
      ctx.headline["public.produce." + mode + ".raw"] = f.raw.produce;
    }
    ctx.clock.line(label_of(mode, consumers) + " ours " + num(f.consumed) + " msg/s, raw best " +
                   num(f.raw.consume_best) + ", raw acking each " + num(f.raw.consume) + ", ratio " +
                   ratio(f.consumed, f.raw.consume_best) + "; after the first second ours " +
                   num(f.consumed_steady) + ", raw best " + num(f.raw.consume_best_steady) + ", ratio " +
                   ratio(f.consumed_steady, f.raw.consume_best_steady) + "; fill at the broker ours " +
                   num(f.produced.at_broker) + ", raw " + num(f.raw.produce));
  }
  return t;
}

}  // namespace dde::bench
