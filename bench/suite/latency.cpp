// Experiment 11: end-to-end latency under load. A producer pool sends at half the rate a producer
// and a consumer pool sustain together at full speed, each message stamped with its send time; the
// consumer pool reports send-to-receipt percentiles. The raw client then publishes at the same rate
// on one connection while another consumes (dde-raw-amqp latency), same queue kind and confirms.
#include <iostream>

#include "flow_point.hpp"

namespace dde::bench {
namespace {

/// Percentiles of one run, ms.
struct latency_run {
  double max_rate = 0, offered = 0;  ///< ours at full speed, and the rate both were run at
  double ours_p50 = 0, ours_p99 = 0, ours_max = 0;
  double raw_p50 = 0, raw_p99 = 0, raw_max = 0;
};

/// A consumer pool (1 worker, credits 64) and a producer pool sending `n` messages at `rate` (0: as
/// fast as the window allows; `stamp`: with their send time) on `s`; waits until all were consumed.
/// The consumers' throughput, 0 when they did not finish.
double flow(cluster_api& c, const setup& s, long n, double rate, bool stamp) {
  c.deploy(0, s.mqs.front(), {s.system, "consumer", "consumer", {{"stats_dir", s.stats_dir}}, 1, s.mode, 64});
  c.deploy(0, s.mqs.front(),
           {s.system + "p",
            "producer",
            "producer",
            {{"to", s.system + "/consumer"}, {"count", n}, {"size", 64}, {"rate", rate}, {"stamp", stamp}},
            1,
            s.mode,
            64});
  const double consumed = await_consumed(c, s, n);
  c.shutdown(0, s.system + "p");
  stop_systems(c, s.system, 1, s.system + ".consumer");
  c.delete_queue(s.system + "p.producer");
  return consumed;
}

latency_run measure(suite_context& ctx, const std::string& mode, double seconds) {
  auto& c = ctx.cluster;
  latency_run r;
  r.max_rate = flow(c, ctx.next(mode, ctx.mqs(64, 1)), ctx.quick ? 40000 : 100000, 0, false);
  if (r.max_rate <= 0) return r;
  r.offered = r.max_rate / 2;
  const long n = long(r.offered * seconds);
  auto s = ctx.next(mode, ctx.mqs(64, 1));
  if (flow(c, s, n, r.offered, true) > 0) {
    auto stats = test::all_stats(s.stats_dir, "consumer-");
    if (stats.size() == 1 && stats.front().value("latency_count", 0L) > 0) {
      r.ours_p50 = stats.front().value("latency_p50_us", 0.0) / 1000;
      r.ours_p99 = stats.front().value("latency_p99_us", 0.0) / 1000;
      r.ours_max = stats.front().value("latency_max_us", 0.0) / 1000;
    }
  }
  const auto queue = s.system + "raw";
  std::vector<std::string> args{"latency",
                                "--queue",
                                queue,
                                "--count",
                                std::to_string(n),
                                "--rate",
                                std::to_string(r.offered),
                                "--prefetch",
                                "64",
                                "--multiple-ack"};
  for (auto& a : raw_mode_args(mode)) args.push_back(a);
  auto raw = run_raw(c.broker_port(), args);
  c.delete_queue(queue);
  r.raw_p50 = raw.count("latency_p50_us") ? raw["latency_p50_us"] / 1000 : 0;
  r.raw_p99 = raw.count("latency_p99_us") ? raw["latency_p99_us"] / 1000 : 0;
  r.raw_max = raw.count("latency_max_us") ? raw["latency_max_us"] / 1000 : 0;
  return r;
}

}  // namespace

table exp11_latency(suite_context& ctx) {
  table t{
      "exp11_latency",
      "End-to-end latency under load (ms): a producer pool sends 64 B messages at half the rate one producer "
      "and one consumer pool (credits 64, prefetch 64) sustain together at full speed (max_msg_s), each "
      "stamped with its send time, and the consumer pool times send to receipt; the raw client publishes at "
      "the same rate on one connection while another consumes (acks with `multiple`), same queue kind and "
      "confirms. Messages received in the first second are not counted. Each figure the median of 3 "
      "alternating runs, 1 with --quick",
      {"mode", "max_msg_s", "offered_msg_s", "seconds", "ours_p50_ms", "ours_p99_ms", "ours_max_ms",
       "raw_p50_ms", "raw_p99_ms", "raw_max_ms", "p99_ratio"}};
  const double seconds = ctx.quick ? 5 : 10;
  for (auto& mode : delivery_modes) {
    const auto label = "exp11 " + short_mode(mode) + " latency at half the maximum rate:";
    if (!ctx.wants(label)) continue;
    const int n_runs = ctx.quick ? 1 : 3;
    std::vector<latency_run> runs;
    runs.reserve(n_runs);
    for (int i = 0; i < n_runs; ++i) runs.push_back(measure(ctx, mode, seconds));
    latency_run m;
    for (auto f :
         {&latency_run::max_rate, &latency_run::offered, &latency_run::ours_p50, &latency_run::ours_p99,
          &latency_run::ours_max, &latency_run::raw_p50, &latency_run::raw_p99, &latency_run::raw_max}) {
      std::vector<double> v;
      v.reserve(runs.size());
      for (auto& r : runs) v.push_back(r.*f);
      m.*f = median(std::move(v));
    }
    t.add({mode, num(m.max_rate), num(m.offered), num(seconds), num(m.ours_p50, 2), num(m.ours_p99, 2),
           num(m.ours_max, 2), num(m.raw_p50, 2), num(m.raw_p99, 2), num(m.raw_max, 2),
           ratio(m.ours_p99, m.raw_p99)});
    const auto key = "latency." + mode;
    ctx.headline[key + ".ours_p50"] = m.ours_p50;
    ctx.headline[key + ".ours_p99"] = m.ours_p99;
    ctx.headline[key + ".raw_p50"] = m.raw_p50;
    ctx.headline[key + ".raw_p99"] = m.raw_p99;
    ctx.clock.line(label + " " + num(m.offered) + " msg/s (max " + num(m.max_rate) + "): ours p50 " +
                   num(m.ours_p50, 2) + " ms p99 " + num(m.ours_p99, 2) + " ms, raw p50 " +
                   num(m.raw_p50, 2) + " ms p99 " + num(m.raw_p99, 2) + " ms");
  }
  return t;
}

}  // namespace dde::bench
