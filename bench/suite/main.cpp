// dde-bench-suite: thesis section 5.2's experiments 1-7 on a local cluster it starts itself (a
// throw-away RabbitMQ node, dde-registry, 4 dde-activator nodes, dde-mqs processes), every point
// next to the raw rabbitmq-c baseline, and experiment 8 (how soon consuming resumes after a broker
// restart or an MQS kill: it restarts the suite's broker), 9 (each daemon's resident memory, idle
// and under load), 10 (experiment 1 on a cluster deploy/cluster.sh started, driven with ddectl) and
// 11 (end-to-end latency at half the maximum rate). Writes one CSV per experiment and
// summary.md to --out; deploy/bench.sh runs it and draws the plots (bench/plots/*.gp).
#include <sys/utsname.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include "experiments.hpp"

namespace {

using namespace dde::bench;
namespace fs = std::filesystem;

constexpr const char* usage = R"(usage: dde-bench-suite --out DIR [--quick] [--only 1,2,...] [--points TEXT]
  --out DIR    where the CSV files and summary.md go (created)
  --quick      few points, short runs (the CI smoke run)
  --only LIST  run only these experiments (1-11; 6 and 7 come from the same runs; 8 is recovery, 9 the
               daemons' resident memory, which runs first; 10 experiment 1's prefetch-64 points on a
               cluster started with deploy/cluster.sh and driven with ddectl, as users run it; 11 the
               end-to-end latency at half the maximum rate)
  --points TEXT  in experiments 1, 4, 6, 7, 10 and 11, only the points whose progress line begins with a label
               holding TEXT (e.g. "AMO prefetch 64 consumers 1:", "AMO 16 requesters, 1"), for A/B runs
)";

std::string first_line_with(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      auto value = line.substr(line.find(':') + 1);
      return value.substr(std::min(value.size(), value.find_first_not_of(" \t")));
    }
  return "?";
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// One row of the targets table: `measured` against `goal` (at least, or at most), with the figures it
/// comes from (ours and the raw client's, "-" when they do not apply).
std::string target_line(const std::string& what, double measured, double goal, bool at_least,
                        const std::string& ours = "-", const std::string& raw_best = "-",
                        const std::string& raw_each = "-", bool was_measured = true) {
  bool met = at_least ? measured >= goal : measured <= goal;
  was_measured = was_measured && measured > 0;
  // Two decimals, or more where fewer would round onto the goal the other way (0.697 is not 0.70).
  const double goal_shown = std::stod(num(goal, 2));
  std::string shown = num(measured, 2);
  for (int d = 3; !met && d <= 6 && std::stod(shown) == goal_shown; ++d) shown = num(measured, d);
  return "| " + what + " | " + (at_least ? ">= " : "<= ") + num(goal, 2) + " | " +
         (was_measured ? shown : "-") + " | " + ours + " | " + raw_best + " | " + raw_each + " | " +
         (was_measured ? (met ? "met" : "**missed**") : "not measured") + " |\n";
}

std::string targets(std::map<std::string, double>& h) {
  auto has = [&](const std::string& key) { return h.count(key) > 0; };
  std::string md =
      "## Targets\n\nRatios are ours / the best raw client on the same broker in the same run (it "
      "acks with `multiple`; publishes with the same confirms); the raw client acking each message is the "
      "second column. Latencies in ms.\n\n"
      "| target | goal | measured | ours | raw (best) | raw (ack each) | |\n|---|---|---|---|---|---|---|\n";
  auto consumption = [&](const std::string& mode, int consumers, double goal) {
    auto key = "consume." + mode + ".p64.c" + std::to_string(consumers);
    if (!has(key + ".ours")) return;
    double ours = h[key + ".ours"], best = h[key + ".raw"], each = h[key + ".raw_each"];
    md += target_line((mode == "at-most-once" ? "AMO" : "ALO") +
                          std::string(" consumption / best raw, prefetch 64, 64 B, ") +
                          std::to_string(consumers) + " consumer" + (consumers > 1 ? "s" : ""),
                      best > 0 ? ours / best : 0, goal, true, num(ours) + " msg/s", num(best), num(each));
  };
  consumption("at-most-once", 1, 0.85);
  for (int c : {4, 8, 16, 32}) consumption("at-most-once", c, 0.75);
  consumption("at-least-once", 1, 0.85);
  // What a long-running consumer sees: the rates after each run's first second.
  auto sustained = [&](int consumers, double goal) {
    auto key = "consume.at-most-once.p64.c" + std::to_string(consumers);
    if (!has(key + ".ours_steady")) return;
    double ours = h[key + ".ours_steady"], best = h[key + ".raw_steady"];
    md += target_line("AMO sustained consumption (after the first second) / best raw's, prefetch 64, 64 B, " +
                          std::to_string(consumers) + " consumer" + (consumers > 1 ? "s" : ""),
                      best > 0 ? ours / best : 0, goal, true, num(ours) + " msg/s", num(best));
  };
  sustained(1, 0.85);
  for (int c : {4, 8, 16, 32}) sustained(c, 0.75);
  // The same on the path users run (experiment 10): whole runs and after the first second.
  for (int c : {1, 4, 16}) {
    const auto key = "public.consume.at-most-once.c" + std::to_string(c);
    if (!has(key + ".ours")) continue;
    const double goal = c == 1 ? 0.85 : 0.75;
    const auto who = std::to_string(c) + " consumer" + (c > 1 ? "s" : "");
    double ours = h[key + ".ours"], best = h[key + ".raw"], each = h[key + ".raw_each"];
    md +=
        target_line("public path (cluster.sh, ddectl): AMO consumption / best raw, prefetch 64, 64 B, " + who,
                    best > 0 ? ours / best : 0, goal, true, num(ours) + " msg/s", num(best), num(each));
    ours = h[key + ".ours_steady"], best = h[key + ".raw_steady"];
    md += target_line("public path: AMO sustained consumption (after the first second) / best raw's, " + who,
                      best > 0 ? ours / best : 0, goal, true, num(ours) + " msg/s", num(best));
  }
  for (auto mode : {"at-most-once", "at-least-once"})
    for (int n : {1, 2, 4, 8}) {
      auto key = std::string("produce.") + mode + ".n" + std::to_string(n);
      if (!has(key + ".ours")) continue;
      double ours = h[key + ".ours"], raw = h[key + ".raw"];
      md += target_line(std::string(mode == std::string("at-most-once") ? "AMO" : "ALO") +
                            " production at the broker / raw publish, " + std::to_string(n) + " producer" +
                            (n > 1 ? "s" : ""),
                        raw > 0 ? ours / raw : 0, 0.85, true, num(ours) + " msg/s", num(raw));
    }
  if (has("rtt.at-least-once.r1.s1.p50.ours")) {
    double ours = h["rtt.at-least-once.r1.s1.p50.ours"], raw = h["rtt.at-least-once.r1.s1.p50.raw"];
    md += target_line("ALO request-reply p50 / raw's, 1 requester, 1 supplier", raw > 0 ? ours / raw : 0, 1.5,
                      false, num(ours, 2) + " ms", num(raw, 2) + " ms");
  }
  for (int r : {2, 4, 8, 16}) {
    auto key = "rtt.at-most-once.r" + std::to_string(r) + ".s1.p99";
    if (!has(key + ".ours")) continue;
    md += target_line("AMO request-reply p99 (ms), " + std::to_string(r) + " requesters, 1 supplier",
                      h[key + ".ours"], 5, false, num(h[key + ".ours"], 2) + " ms",
                      num(h[key + ".raw"], 2) + " ms");
  }
  for (auto mode : {"at-most-once", "at-least-once"}) {
    const auto key = std::string("latency.") + mode;
    if (!has(key + ".ours_p99")) continue;
    const double ours = h[key + ".ours_p99"], raw = h[key + ".raw_p99"];
    md += target_line(std::string(mode == std::string("at-most-once") ? "AMO" : "ALO") +
                          " end-to-end latency p99 / raw's, at half the maximum rate (exp 11)",
                      raw > 0 ? ours / raw : 0, 2, false,
                      num(ours, 2) + " ms (p50 " + num(h[key + ".ours_p50"], 2) + ")",
                      num(raw, 2) + " ms (p50 " + num(h[key + ".raw_p50"], 2) + ")");
  }
  // Experiment 8: the worst run is judged (a run that did not resume misses).
  auto recovery = [&](const std::string& key, const std::string& what) {
    const auto k = "recovery." + key;
    if (!has(k + ".runs")) {
      md += target_line(what, 0, 1, false, "-", "-", "-", false);
      return;
    }
    const int n = int(h[k + ".runs"]);
    const bool failed = h[k + ".failed"] > 0;
    const double worst = h[k + ".worst"];
    const auto measured = failed ? std::string("did not resume") : num(worst, 2);
    const auto median = num(h[k + ".median"], 2);
    const auto ours =
        failed ? std::string("-") : "worst of " + std::to_string(n) + ", median " + median + " s";
    md += "| " + what + " | <= 1.00 | " + measured + " | " + ours + ", lost " + num(h[k + ".lost"]) +
          " | - | - | " + (!failed && worst <= 1 ? "met" : "**missed**") + " |\n";
  };
  recovery("broker", "consuming resumes after a broker restart (s after it accepts connections)");
  recovery("mqs", "consuming resumes after an MQS kill (s after the new MQS is up)");
  if (has("size.checked")) {
    const double wrong = h["size.mismatch"];
    md += "| payload bytes at the broker == the producer's `size` (exp 2) | every point | " +
          num(h["size.checked"] - wrong) + " of " + num(h["size.checked"]) + " | - | - | - | " +
          (wrong == 0 ? "met" : "**missed**") + " |\n";
  }
  return md;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  fs::path out;
  std::set<int> only;
  std::string points;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      std::string list = argv[++i];
      for (std::size_t p = 0; p < list.size();
           p = list.find(',', p) == std::string::npos ? list.size() : list.find(',', p) + 1)
        only.insert(std::stoi(list.substr(p)));
    } else if (a == "--points" && i + 1 < argc) {
      points = argv[++i];
    } else {
      std::cerr << (a == "--help" ? "" : "dde-bench-suite: bad argument " + a + "\n") << usage;
      return a == "--help" ? 0 : 2;
    }
  }
  if (out.empty()) {
    std::cerr << usage;
    return 2;
  }
  auto runs = [&](int e) { return only.empty() || only.count(e); };
  try {
    fs::create_directories(out);
    const std::string load_before = load_average();
    const std::time_t started = std::time(nullptr);
    progress clock;
    clock.line(std::string("starting RabbitMQ, dde-registry and 4 dde-activator nodes") +
               (quick ? " (--quick)" : ""));
    bench_cluster cluster(dde::test::fresh_dir("bench-suite"), 4);
    suite_context ctx{cluster, quick, clock, {}, 0, points};
    std::vector<table> tables;
    auto run = [&](int e, auto fn) {
      if (!runs(e)) return;
      ctx.clock.line("experiment " + std::to_string(e));
      auto t = fn(ctx);
      t.write_csv(out);
      tables.push_back(std::move(t));
    };
    // First, so that its idle figures are those of a fresh cluster.
    run(9, exp9_memory);
    run(1, exp1_consumers);
    run(2, exp2_message_size);
    run(3, exp3_mqs_scaling);
    run(4, exp4_production);
    run(5, exp5_simultaneous);
    if (runs(6) || runs(7)) {
      ctx.clock.line("experiments 6 and 7");
      for (auto& t : exp6_7_request_reply(ctx)) {
        t.write_csv(out);
        tables.push_back(std::move(t));
      }
    }
    run(11, exp11_latency);
    run(8, exp8_recovery);
    run(10, exp10_public_path);
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&started));
    utsname u{};
    ::uname(&u);
    std::ofstream md(out / "summary.md");
    md << "# DDE benchmark suite" << (quick ? " (--quick: few points, short runs)" : "") << "\n\n"
       << "Run " << date << ", " << num(ctx.clock.elapsed_s())
       << " s. Machine: " << std::thread::hardware_concurrency() << " CPUs ("
       << first_line_with("/proc/cpuinfo", "model name") << "), "
       << first_line_with("/proc/meminfo", "MemTotal") << " RAM, " << u.sysname << " " << u.release
       << "; RabbitMQ, dde-mqs, the isolate systems and the raw client all on this machine. Load average "
       << load_before << " before, " << load_average() << " after.\n\n"
       << "Every point runs through the deployment path (registry -> activator -> isolate systems -> dde-mqs "
          "-> "
          "RabbitMQ) and then the raw rabbitmq-c client (`dde-raw-amqp`) with the same message size, "
          "prefetch, "
          "connections and queue kind, in the same run; `ratio` is ours/raw. at-most-once: non-durable "
          "classic queue, transient messages, no confirms. at-least-once: quorum queue, persistent "
          "messages, publisher confirms (raw: window 1000), ack after the worker is done. The raw consumer "
          "acks each message unless a column says `best` (acks with `multiple` every prefetch/2).\n\n"
       << targets(ctx.headline) << "\n";
    for (auto& t : tables) md << "## " << t.title << "\n\n`" << t.name << ".csv`\n\n" << t.markdown() << "\n";
    md << "## Plots\n\n";
    for (auto plot :
         {"exp1_consumers", "exp2_consume_size", "exp2_produce_size", "exp3_consume_mqs", "exp3_produce_mqs",
          "exp4_production", "exp5_one_mqs", "exp5_two_mqs", "exp6_request_reply", "exp7_rtt"})
      md << "![" << plot << "](" << plot << ".png)\n";
    clock.line("done: " + out.string());
  } catch (const std::exception& e) {
    std::cerr << "dde-bench-suite: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
