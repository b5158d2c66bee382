// The cost of the opt-in features (traces, canaries) on the hot path, each next to the same pipeline
// without it in the same run: producer -> consumer end to end (at-least-once, 64-byte messages, a
// consumer pool of 2 workers) through a registry, an activator and an MQS on one throw-away broker.
//   plain:  nothing opt-in;
//   traces: the isolate systems write the span log (dde-activator --trace-log, the manual's "Traces");
//   canary: a canary runs on the consumer pool (one of its two workers on a new version, judged
//           never within the run), so every message is counted per version for the verdict.
// Rate: messages over the time from the producer's first send until the consumer pool reports every
// message done. Medians of alternating rounds. The raw rabbitmq-c consumer (acks with `multiple`, same
// queue kind) on the same broker is printed for reference.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench_cli.hpp"
#include "suite/bench_cluster.hpp"

namespace {

using namespace dde::test;
using nlohmann::literals::operator""_json_pointer;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct bench {
  std::filesystem::path dir;
  rabbitmq_node& broker;
  mqs_process& mqs;
  registry_process& registry;
  std::string plain_node, traced_node;
  long n;

  /// The consumer pool `sys/consumer` as node `node` describes it (null when not listed).
  nlohmann::json consumer_pool(const std::string& node, const std::string& sys) {
    auto show = rest("GET", registry.url() + "/registry/system/" + node).json;
    for (auto& p : show.value(sys, nlohmann::json::array()))
      if (p.value("id", "") == sys + "/consumer") return p;
    return nullptr;
  }

  void deploy(const nlohmann::json& body) {
    auto r = rest("POST", registry.url() + "/registry/deploy", body.dump());
    if (r.status != 200) throw std::runtime_error("deploy failed: " + r.body);
  }

  /// One run of `variant`; its rate in messages per second.
  double run(const std::string& variant, int round) {
    auto d = dir / (variant + "-" + std::to_string(round));
    std::filesystem::create_directories(d);
    std::string sys = "feat" + std::to_string(::getpid()) + variant + std::to_string(round);
    auto node = variant == "traces" ? traced_node : plain_node;
    auto consumer = deploy_body(node, mqs.url(), sys, "consumer", "consumer", {{"stats_dir", d}},
                                {"localhost", "localhost"});
    if (variant == "canary") {
      auto plugin = d / "libconsumer.so";
      install_file(worker_path("consumer"), plugin);
      consumer["uri"] = plugin.string();
      consumer["hotDeployment"] = true;
      consumer["hotDeploymentIntervalMs"] = 50;
      consumer["canary"] = {{"workers", 1}, {"windowMs", 86400000}, {"minMessages", 1000000}};
    }
    deploy(consumer);
    if (variant == "canary") {
      // A new version: the same plugin with one byte more (another md5, the same code).
      auto next = d / "libconsumer-next.so";
      std::filesystem::copy_file(worker_path("consumer"), next);
      std::ofstream(next, std::ios::app) << '\n';
      install_file(next, d / "libconsumer.so");
      if (!wait_until(
              [&] {
                auto p = consumer_pool(node, sys);
                auto state =
                    p.is_object() ? p.value("/hotDeploy/canary/state"_json_pointer, std::string()) : "";
                return state == "running";
              },
              60s))
        throw std::runtime_error("the canary did not start: " + consumer_pool(node, sys).dump());
    }
    deploy(deploy_body(node, mqs.url(), sys + "p", "producer", "producer",
                       {{"to", sys + "/consumer"}, {"count", n}, {"size", 64}, {"stats_dir", d}}));
    std::int64_t done_us = 0;
    if (!wait_until(
            [&] {
              auto p = consumer_pool(node, sys);
              if (!p.is_object() || p["stats"].value("done", 0L) < n) return false;
              done_us = now_us();
              return true;
            },
            600s, 20ms))
      throw std::runtime_error(variant + ": the consumer did not finish: " + consumer_pool(node, sys).dump());
    auto span = dde::bench::read_span(d, "producer-", "sent");
    double rate = dde::bench::rate(double(n), span.first_us, done_us);
    for (auto& s : {sys, sys + "p"})
      rest("POST", registry.url() + "/registry/system/shutdown",
           nlohmann::json{{"bootstrapperId", node}, {"isolateSystemName", s}}.dump());
    broker.delete_queue(sys + ".consumer");
    std::cerr << "[bench] " << variant << " round " << round << ": " << long(rate) << " msg/s\n";
    return rate;
  }
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  if (auto code = dde::bench::bench_command_line(
          argc, argv, "dde-bench-features",
          "What traces and a running canary cost end to end, next to the same pipeline without them.", quick))
    return *code;
  const long n = quick ? 10000 : 50000;
  const int rounds = quick ? 1 : 3;
  auto dir = fresh_dir("bench-features");
  rabbitmq_node broker("features");
  broker.start();
  auto mqs = start_mqs(broker, dir, 64);
  auto registry = start_registry(dir);
  auto plain = start_activator(registry, dir, "plain");
  auto traced = start_activator(registry, dir, "traced", 0, {"--trace-log", (dir / "spans.jsonl").string()});
  bench b{dir, broker, mqs, registry, node_id(registry, "plain"), node_id(registry, "traced"), n};

  const std::vector<std::string> variants = {"plain", "traces", "canary"};
  std::map<std::string, std::vector<double>> rates;
  try {
    for (int round = 0; round < rounds; ++round)
      for (auto& v : variants) rates[v].push_back(b.run(v, round));
  } catch (const std::exception& e) {
    std::cerr << "dde-bench-features: " << e.what() << "\n";
    return 1;
  }
  std::vector<std::string> raw_args{"consume", "--queue",         "featraw" + std::to_string(::getpid()),
                                    "--count", std::to_string(n), "--prefetch",
                                    "64",      "--multiple-ack"};
  auto produce = raw_args;
  produce[0] = "produce";
  produce.resize(5);
  produce.insert(produce.end(), {"--size", "64"});
  for (auto& a : dde::bench::raw_mode_args("at-least-once")) {
    produce.push_back(a);
    raw_args.push_back(a);
  }
  dde::bench::run_raw(broker, produce);
  double raw = dde::bench::run_raw(broker, raw_args)["rate"];
  broker.delete_queue("featraw" + std::to_string(::getpid()));

  std::ifstream spans(dir / "spans.jsonl");
  std::size_t span_lines =
      std::count(std::istreambuf_iterator<char>(spans), std::istreambuf_iterator<char>(), '\n');
  std::printf(
      "DDE features benchmark: %ld at-least-once 64-byte messages producer -> consumer (2 workers), "
      "median of %d alternating round(s)\n\n",
      n, rounds);
  std::printf("| variant | msg/s | vs plain | raw rabbitmq-c consume (multiple acks) |\n|---|---|---|---|\n");
  double base = median(rates["plain"]);
  for (auto& v : variants)
    std::printf("| %s | %.0f | %.2f | %.0f |\n", v.c_str(), median(rates[v]),
                base > 0 ? median(rates[v]) / base : 0, raw);
  std::printf("\nspan log: %zu spans for %ld traced messages\n", span_lines, n * rounds);
  broker.stop();
  return 0;
}
