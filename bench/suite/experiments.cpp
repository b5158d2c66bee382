#include "experiments.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <ctime>
#include <functional>
#include <thread>

#include "flow_point.hpp"

namespace dde::bench {
namespace {

/// The time of day of wall-clock µs as the daemons' logs show it (local time, HH:MM:SS.mmm).
std::string time_of_day(std::int64_t us) {
  const std::time_t t = std::time_t(us / 1000000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char text[32];
  const int ms = int(us / 1000 % 1000);
  std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return text;
}

/// Runs of each production point in a full run: one run's figures swing by half between runs of the
/// same code on a 2-core machine (raw publishing alone 53,000-96,000 msg/s), so the median is kept.
constexpr int production_runs = 3;

/// The median of each figure of `runs` (lost and late asks: their sums, as none may go unseen).
request_reply median_of(std::vector<request_reply> runs) {
  request_reply out;
  for (auto f : {&request_reply::rate, &request_reply::p50_ms, &request_reply::p90_ms, &request_reply::p99_ms,
                 &request_reply::max_ms}) {
    std::vector<double> v;
    for (auto& r : runs) v.push_back(r.*f);
    out.*f = median(std::move(v));
  }
  for (auto& r : runs) out.lost += r.lost, out.late += r.late;
  return out;
}

}  // namespace

flow_point fill_then_consume(suite_context& ctx, cluster_api& c, const std::string& mode, int prefetch,
                             int mqs_count, int producers, int consumers, int size, long n) {
  std::vector<std::string> urls;
  urls.reserve(std::size_t(mqs_count));
  for (int i = 0; i < mqs_count; ++i) urls.push_back(c.mqs_url(prefetch, i));
  auto s = ctx.next(mode, std::move(urls));
  flow_point f;
  f.produced = produce(c, s, n, producers, size, true);
  f.payload_bytes = payload_bytes(c, s.system + ".consumer");
  if (consumers > 0) {
    cpu_meter broker_cpu(c.broker_pid());
    const auto rested_from = f.produced.filled_us;
    const int used = start_consumers_together(c, s, consumers, std::max(8, prefetch),
                                              rested_from + std::int64_t(backlog_rest.count()) * 1000000);
    const auto released_us = now_us();
    f.consumed = await_consumed(c, s, n / producers * producers);
    f.consumed_steady = consumed_steady(s);
    auto span = read_span(s.stats_dir, "consumer-", "received");
    if (n > 0) f.broker_us = broker_cpu.between(span.first_us, span.last_us) * 1e6 / double(n);
    if (rested_from > 0) f.rested_s = double(released_us - rested_from) / 1e6;
    stop_systems(c, s.system, used);
  }
  c.delete_queue(s.system + ".consumer");
  f.raw = raw_produce_consume(c, mode, n, size, producers, consumers, prefetch,
                              std::chrono::milliseconds(std::int64_t(f.rested_s * 1000)));
  return f;
}

/// Messages per consumption point: enough for a few seconds at the expected rate. At prefetch 64,
/// where the targets are, a point runs several seconds even for the raw client (about 100,000 msg/s
/// here), so the rate after the first second, which a long-running consumer sees, is measured apart
/// from the first burst.
long consume_count(const suite_context& ctx, const std::string& mode, int prefetch, int size) {
  if (prefetch >= 64 && size <= 64) return ctx.quick ? 200000 : 400000;
  long n = prefetch <= 1 ? (mode == "at-least-once" ? 4000 : 8000) : prefetch <= 8 ? 24000 : 40000;
  if (size > 1024) n = std::max(2000L, n * 1024 / size * 4);
  return ctx.quick ? n / 2 : n;
}

std::vector<std::string> suite_context::mqs(int prefetch, int count) {
  std::vector<std::string> urls;
  for (int i = 0; i < count; ++i) urls.push_back(cluster.mqs_url(prefetch, i));
  return urls;
}

setup suite_context::next(const std::string& mode, std::vector<std::string> urls) {
  setup s;
  s.system = "b" + std::to_string(++point) + "x" + std::to_string(::getpid());
  s.mode = mode;
  s.mqs = std::move(urls);
  s.stats_dir = cluster.dir() / s.system;
  std::filesystem::create_directories(s.stats_dir);
  return s;
}

table exp1_consumers(suite_context& ctx) {
  table t{"exp1_consumers",
          "Thesis fig. 5.1: consumption throughput vs consumers, per prefetch (64 B; raw_best acks with "
          "`multiple` every prefetch/2 messages, raw_each acks each; with prefetch 64 each figure the median "
          "of 3 alternating runs, 1 with --quick; *_steady: the rate after the first second, which a "
          "long-running consumer sees, measured at prefetch 64 only (- elsewhere: those points are shorter); "
          "broker_us_*: RabbitMQ's CPU µs per message while ours and the best raw client consumed; "
          "rested_s: how long each filled queue sat before ours, and then each raw client, began to drain "
          "it: at least 3 s, for RabbitMQ's classic queue drains a backlog several times slower once it "
          "rested a second, whoever consumes, see bench/profile/rest.sh)",
          {"mode", "prefetch", "consumers", "messages", "ours_msg_s", "raw_best_msg_s", "raw_each_msg_s",
           "ratio_best", "ratio_each", "steady_ours_msg_s", "steady_raw_best_msg_s", "steady_ratio_best",
           "broker_us_ours", "broker_us_raw_best", "rested_s"}};
  const std::vector<int> consumers =
      ctx.quick ? std::vector<int>{1, 4} : std::vector<int>{1, 2, 4, 8, 16, 32};
  const std::vector<int> prefetches = ctx.quick ? std::vector<int>{1, 64} : std::vector<int>{1, 4, 8, 16, 64};
  for (auto& mode : delivery_modes)
    for (int p : prefetches)
      for (int n_consumers : consumers) {
        const auto label = "exp1 " + short_mode(mode) + " prefetch " + std::to_string(p) + " consumers " +
                           std::to_string(n_consumers) + ":";
        if (!ctx.wants(label)) continue;
        long n = consume_count(ctx, mode, p);
        // The summary's targets are at prefetch 64: one run's figures swing too much to judge by.
        auto f = median_of_runs(p == 64 && !ctx.quick ? 3 : 1, [&] {
          return fill_then_consume(ctx, ctx.cluster, mode, p, 1, 1, n_consumers, 64, n);
        });
        const bool steady = p >= 64;
        auto or_dash = [&](const std::string& text) { return steady ? text : std::string("-"); };
        t.add({mode, std::to_string(p), std::to_string(n_consumers), std::to_string(n), num(f.consumed),
               num(f.raw.consume_best), num(f.raw.consume), ratio(f.consumed, f.raw.consume_best),
               ratio(f.consumed, f.raw.consume), or_dash(num(f.consumed_steady)),
               or_dash(num(f.raw.consume_best_steady)),
               or_dash(ratio(f.consumed_steady, f.raw.consume_best_steady)), num(f.broker_us, 1),
               num(f.raw.broker_us_best, 1), num(f.rested_s, 1)});
        auto key = "consume." + mode + ".p" + std::to_string(p) + ".c" + std::to_string(n_consumers);
        ctx.headline[key + ".ours"] = f.consumed;
        ctx.headline[key + ".raw"] = f.raw.consume_best;
        ctx.headline[key + ".raw_each"] = f.raw.consume;
        if (steady) {
          ctx.headline[key + ".ours_steady"] = f.consumed_steady;
          ctx.headline[key + ".raw_steady"] = f.raw.consume_best_steady;
        }
        ctx.clock.line(
            label + " ours " + num(f.consumed) + " msg/s, raw best " + num(f.raw.consume_best) +
            ", raw acking each " + num(f.raw.consume) + ", ratio " + ratio(f.consumed, f.raw.consume_best) +
            (steady ? "; after the first second ours " + num(f.consumed_steady) + ", raw best " +
                          num(f.raw.consume_best_steady) + ", ratio " +
                          ratio(f.consumed_steady, f.raw.consume_best_steady)
                    : std::string()) +
            "; broker CPU " + num(f.broker_us, 1) + " µs/msg (raw best " + num(f.raw.broker_us_best, 1) +
            "); each drained a queue that rested " + num(f.rested_s, 1) + " s");
      }
  return t;
}

table exp2_message_size(suite_context& ctx) {
  table t{"exp2_message_size",
          "Thesis figs. 5.2/5.3: consumption (8 consumers, prefetch 8) and production (1 producer) vs "
          "message size",
          {"mode", "size", "payload_bytes", "messages", "ours_consume", "raw_consume", "consume_ratio",
           "ours_produce", "raw_produce", "produce_ratio"}};
  const std::vector<int> sizes = ctx.quick ? std::vector<int>{64, 4096, 65536}
                                           : std::vector<int>{64, 256, 512, 1024, 4096, 16384, 65536};
  for (auto& mode : delivery_modes)
    for (int size : sizes) {
      long n = consume_count(ctx, mode, 8, size);
      auto f = fill_then_consume(ctx, ctx.cluster, mode, 8, 1, 1, 8, size, n);
      // payload_bytes: what the broker holds of one of our producers' messages of `size`.
      if (f.payload_bytes != size) ctx.headline["size.mismatch"] += 1;
      ctx.headline["size.checked"] += 1;
      t.add({mode, std::to_string(size), std::to_string(f.payload_bytes), std::to_string(n), num(f.consumed),
             num(f.raw.consume), ratio(f.consumed, f.raw.consume), num(f.produced.at_broker),
             num(f.raw.produce), ratio(f.produced.at_broker, f.raw.produce)});
      ctx.clock.line("exp2 " + short_mode(mode) + " size " + std::to_string(size) + ": consume ours " +
                     num(f.consumed) + " raw " + num(f.raw.consume) + "; produce ours " +
                     num(f.produced.at_broker) + " raw " + num(f.raw.produce));
    }
  return t;
}

table exp3_mqs_scaling(suite_context& ctx) {
  table t{"exp3_mqs_scaling",
          "Thesis figs. 5.4/5.5: consumption (prefetch 8) and production (at the broker) with 1, 2, 4 MQS",
          {"kind", "mode", "mqs", "clients", "messages", "ours_msg_s", "raw_msg_s", "ratio"}};
  const std::vector<int> mqs_counts = ctx.quick ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4};
  const std::vector<int> consumers = ctx.quick ? std::vector<int>{4} : std::vector<int>{4, 8, 16, 32};
  const std::vector<int> producers = ctx.quick ? std::vector<int>{2} : std::vector<int>{1, 2, 4, 8};
  for (auto& mode : delivery_modes)
    for (int m : mqs_counts) {
      for (int n_consumers : consumers) {
        long n = consume_count(ctx, mode, 8);
        auto f = fill_then_consume(ctx, ctx.cluster, mode, 8, m, 1, n_consumers, 64, n);
        t.add({"consume", mode, std::to_string(m), std::to_string(n_consumers), std::to_string(n),
               num(f.consumed), num(f.raw.consume), ratio(f.consumed, f.raw.consume)});
        ctx.clock.line("exp3 consume " + short_mode(mode) + " " + std::to_string(m) + " MQS, " +
                       std::to_string(n_consumers) + " consumers: ours " + num(f.consumed) + " raw " +
                       num(f.raw.consume));
      }
      for (int n_producers : producers) {
        long n = (ctx.quick ? 20000 : 40000) / n_producers * n_producers;
        auto f = fill_then_consume(ctx, ctx.cluster, mode, 8, m, n_producers, 0, 64, n);
        t.add({"produce", mode, std::to_string(m), std::to_string(n_producers), std::to_string(n),
               num(f.produced.at_broker), num(f.raw.produce), ratio(f.produced.at_broker, f.raw.produce)});
        ctx.clock.line("exp3 produce " + short_mode(mode) + " " + std::to_string(m) + " MQS, " +
                       std::to_string(n_producers) + " producers: ours " + num(f.produced.at_broker) +
                       " raw " + num(f.raw.produce));
      }
    }
  return t;
}

table exp4_production(suite_context& ctx) {
  table t{"exp4_production",
          "Thesis fig. 5.6: production measured at the isolates vs at the broker (64 B; each figure the "
          "median of 3 runs, 1 with --quick)",
          {"mode", "producers", "messages", "ours_at_isolates", "ours_at_broker", "raw_at_client",
           "raw_at_broker", "broker_ratio"}};
  const std::vector<int> producers = ctx.quick ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 4, 8};
  for (auto& mode : delivery_modes)
    for (int n_producers : producers) {
      const auto label = "exp4 " + short_mode(mode) + " " + std::to_string(n_producers) + " producers:";
      if (!ctx.wants(label)) continue;
      long n = (ctx.quick ? 20000 : 40000) / n_producers * n_producers;
      auto f = median_of_runs(ctx.quick ? 1 : production_runs, [&] {
        return fill_then_consume(ctx, ctx.cluster, mode, 8, 1, n_producers, 0, 64, n);
      });
      t.add({mode, std::to_string(n_producers), std::to_string(n), num(f.produced.at_isolates),
             num(f.produced.at_broker), num(f.raw.produce_client), num(f.raw.produce),
             ratio(f.produced.at_broker, f.raw.produce)});
      auto key = "produce." + mode + ".n" + std::to_string(n_producers);
      ctx.headline[key + ".ours"] = f.produced.at_broker;
      ctx.headline[key + ".raw"] = f.raw.produce;
      ctx.clock.line(label + " at isolates " + num(f.produced.at_isolates) + ", at broker " +
                     num(f.produced.at_broker) + ", raw " + num(f.raw.produce) + ", ratio " +
                     ratio(f.produced.at_broker, f.raw.produce));
    }
  return t;
}

table exp5_simultaneous(suite_context& ctx) {
  table t{"exp5_simultaneous",
          "Thesis figs. 5.7/5.8: production and consumption at the same time, one MQS vs two (prefetch 64)",
          {"mode", "mqs", "pairs", "messages", "ours_produce", "ours_consume", "raw_produce", "raw_consume",
           "produce_ratio", "consume_ratio"}};
  const std::vector<int> pairs = ctx.quick ? std::vector<int>{2} : std::vector<int>{1, 2, 4};
  auto& c = ctx.cluster;
  for (auto& mode : delivery_modes)
    for (int m : {1, 2})
      for (int k : pairs) {
        long n = (ctx.quick ? 20000 : 40000) / k * k;
        auto urls = ctx.mqs(64, m);
        auto consumers = ctx.next(mode, {urls.back()});
        auto producers = consumers;
        producers.mqs = {urls.front()};  // with two MQS, producers on one and consumers on the other
        const int used = start_consumers(c, consumers, k, 64);
        auto produced = produce(c, producers, n, k, 64, false);
        double consumed = await_consumed(c, consumers, n);
        stop_systems(c, consumers.system, used, consumers.system + ".consumer");
        auto raw = raw_simultaneous(c, mode, n, k, k, 64);
        t.add({mode, std::to_string(m), std::to_string(k), std::to_string(n), num(produced.at_isolates),
               num(consumed), num(raw.produce), num(raw.consume), ratio(produced.at_isolates, raw.produce),
               ratio(consumed, raw.consume)});
        ctx.clock.line("exp5 " + short_mode(mode) + " " + std::to_string(m) + " MQS, " + std::to_string(k) +
                       " producers + consumers: produce ours " + num(produced.at_isolates) + " raw " +
                       num(raw.produce) + "; consume ours " + num(consumed) + " raw " + num(raw.consume));
      }
  return t;
}

std::vector<table> exp6_7_request_reply(suite_context& ctx) {
  table rr{"exp6_request_reply",
           "Thesis fig. 5.9: request-reply throughput vs requesters and suppliers",
           {"mode", "requesters", "suppliers", "asks", "ours_msg_s", "raw_msg_s", "ratio", "lost_asks",
            "late_asks"}};
  table rtt{
      "exp7_rtt",
      "Thesis fig. 5.10: request-reply round-trip time (ms; with 1 requester each figure the median of 3 "
      "alternating runs, 1 with --quick)",
      {"mode", "requesters", "suppliers", "ours_p50", "ours_p90", "ours_p99", "ours_max", "raw_p50",
       "raw_p90", "raw_p99", "raw_max"}};
  const std::vector<int> requesters = ctx.quick ? std::vector<int>{1, 4} : std::vector<int>{1, 2, 4, 8, 16};
  const std::vector<int> suppliers = ctx.quick ? std::vector<int>{1} : std::vector<int>{1, 4};
  for (auto& mode : delivery_modes)
    for (int s : suppliers)
      for (int r : requesters) {
        const auto label = "exp6/7 " + short_mode(mode) + " " + std::to_string(r) + " requesters, " +
                           std::to_string(s) + " suppliers:";
        if (!ctx.wants(label)) continue;
        long asks = r == 1 ? (ctx.quick ? 400 : 2000) : (ctx.quick ? 100 : 400);
        // The 1-requester points hold the round-trip p50 target: one run alone is at the mercy of what
        // the broker still does after the points before (quorum queues' WAL and segments), so they
        // take the median of 3 runs, ours and raw alternating, as exp1's prefetch-64 points do.
        const int runs = r == 1 && !ctx.quick ? 3 : 1;
        std::vector<request_reply> ours_runs, raw_runs;
        for (int i = 0; i < runs; ++i) {
          ours_runs.push_back(ask(ctx.cluster, ctx.next(mode, ctx.mqs(8, 1)), r, s, asks));
          raw_runs.push_back(raw_ask(ctx.cluster, mode, r, s, asks));
        }
        auto ours = median_of(std::move(ours_runs)), raw = median_of(std::move(raw_runs));
        rr.add({mode, std::to_string(r), std::to_string(s), std::to_string(asks * r), num(ours.rate),
                num(raw.rate), ratio(ours.rate, raw.rate), std::to_string(ours.lost),
                std::to_string(ours.late)});
        rtt.add({mode, std::to_string(r), std::to_string(s), num(ours.p50_ms, 2), num(ours.p90_ms, 2),
                 num(ours.p99_ms, 2), num(ours.max_ms, 2), num(raw.p50_ms, 2), num(raw.p90_ms, 2),
                 num(raw.p99_ms, 2), num(raw.max_ms, 2)});
        auto key = "rtt." + mode + ".r" + std::to_string(r) + ".s" + std::to_string(s);
        ctx.headline[key + ".p50.ours"] = ours.p50_ms;
        ctx.headline[key + ".p99.ours"] = ours.p99_ms;
        ctx.headline[key + ".p50.raw"] = raw.p50_ms;
        ctx.headline[key + ".p99.raw"] = raw.p99_ms;
        ctx.clock.line(label + " ours " + num(ours.rate) + " msg/s (p50 " + num(ours.p50_ms, 2) +
                       " ms, p99 " + num(ours.p99_ms, 2) + " ms), raw " + num(raw.rate) + " (p50 " +
                       num(raw.p50_ms, 2) + " ms, p99 " + num(raw.p99_ms, 2) + " ms)");
      }
  return {rr, rtt};
}

table exp8_recovery(suite_context& ctx) {
  using namespace std::chrono_literals;
  const int runs = ctx.quick ? 1 : 3;
  constexpr double rate = 2000;  // msg/s
  table t{
      "exp8_recovery",
      "Recovery: seconds from the broker (its first AMQP login) or a new MQS (its port) "
      "accepting connections until the consumers get a message again (at-least-once, quorum queue; a "
      "producer at 2,000 msg/s and 2 consumers in one isolate system; the broker is stopped (SIGTERM) and "
      "started, "
      "the MQS killed and started again 2 s later; outage: the consumers' longest gap that ended after the "
      "fault; median and "
      "worst of " +
          std::to_string(runs) + " run" + (runs > 1 ? "s" : "") + ")",
      {"scenario", "runs", "messages", "ours_resume_s_median", "ours_resume_s_worst", "ours_outage_s_median",
       "ours_outage_s_worst", "lost", "duplicates"}};
  auto& c = ctx.cluster;
  // An MQS of its own: killing it disturbs no other experiment's pools.
  const auto url = c.mqs_url(64, 8);
  struct scenario {
    std::string name, key;
    long count;  ///< enough to flow before, and to go on after the outage (the producer waits meanwhile)
    std::function<std::int64_t()> inject;
  };
  const std::vector<scenario> scenarios{
      {"broker restart", "broker", long(rate) * 20,
       [&] {
         auto& b = c.broker();
         // SIGTERM, a graceful stop that begins at once: rabbitmqctl's VM once took 18 s to start
         // on a loaded machine, and the producer had finished before the broker went down.
         b.terminate();
         // Started before the broker: its first successful login is when the broker is back, to
         // ~10 ms (start() itself looks only every 100 ms).
         readiness_probe probe(
             [&b] { return test::detail::can_login(b.host(), b.port(), b.user(), b.password(), 1s); }, 10ms);
         // The node recovers every quorum queue the experiments before left: on a loaded machine
         // (CI beside other jobs, the stress run) that took more than a minute once.
         b.start(180s);
         return probe.wait(180s);
       }},
      {"MQS kill -9", "mqs", long(rate) * 10,
       [&] {
         const auto port = c.mqs_port(url);
         c.kill_mqs(url);
         // Down for 2 s, as the packaged unit's RestartSec=2 keeps it: long enough for the hosts'
         // reconnect delays to grow (restarted at once, it is back before their first retry).
         std::this_thread::sleep_for(2s);
         readiness_probe probe([port] { return test::port_open(port); }, 10ms);
         c.restart_mqs(url);
         return probe.wait(30s);
       }},
  };
  for (auto& sc : scenarios) {
    std::vector<double> resume, outage;
    long lost = 0, duplicates = 0;
    bool failed = false;
    for (int i = 0; i < runs; ++i) {
      // A run whose fault came after every message was consumed measured nothing: it is run again
      // (up to twice more); the third such run counts as not resumed.
      auto r = measure_recovery(c, ctx.next("at-least-once", {url}), rate, sc.count, sc.inject);
      for (int again = 0; r.flow_ended_first && again < 2; ++again) {
        ctx.clock.line("exp8 " + sc.name + " run " + std::to_string(i + 1) +
                       ": the fault came after the flow had ended; again");
        r = measure_recovery(c, ctx.next("at-least-once", {url}), rate, sc.count, sc.inject);
      }
      lost += std::max(0L, r.count - r.unique);
      duplicates += r.duplicates;
      failed = failed || !r.resumed;
      if (r.resumed) resume.push_back(r.resume_s), outage.push_back(r.outage_s);
      ctx.clock.line(
          "exp8 " + sc.name + " run " + std::to_string(i + 1) + ": " +
          (r.resumed ? "consuming resumed " + num(r.resume_s, 3) +
                           " s after the repaired peer "
                           "accepted connections (outage " +
                           num(r.outage_s, 2) + " s: last message " + time_of_day(r.stopped_us) + ", ready " +
                           time_of_day(r.ready_us) + ", first message " + time_of_day(r.resumed_us) + ")"
           : r.flow_ended_first
               ? std::string("measured nothing: three times the fault came after the flow had ended")
               : std::string("consuming did NOT resume")) +
          ", " + std::to_string(r.unique) + " of " + std::to_string(r.count) + " consumed, " +
          std::to_string(r.duplicates) + " duplicates");
    }
    std::sort(resume.begin(), resume.end());
    std::sort(outage.begin(), outage.end());
    auto worst = [](const std::vector<double>& v) { return v.empty() ? 0.0 : v.back(); };
    // A run that did not resume leaves 0 in the resume columns: a point that did not complete.
    t.add({sc.name, std::to_string(runs), std::to_string(sc.count), num(failed ? 0 : median(resume), 3),
           num(failed ? 0 : worst(resume), 3), num(median(outage), 2), num(worst(outage), 2),
           std::to_string(lost), std::to_string(duplicates)});
    auto key = "recovery." + sc.key;
    ctx.headline[key + ".runs"] = runs;
    ctx.headline[key + ".failed"] = failed ? 1 : 0;
    ctx.headline[key + ".median"] = median(resume);
    ctx.headline[key + ".worst"] = worst(resume);
    ctx.headline[key + ".lost"] = double(lost);
  }
  return t;
}

}  // namespace dde::bench
