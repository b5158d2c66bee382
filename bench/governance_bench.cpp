// Rate-limit governance benchmark: 8 api_caller workers in 2 isolate systems against the
// test API server (40 calls in every second; a violation costs a 1 s cessation, doubled by each call
// made during it), on a real local cluster. Three runs on the same server settings, in one go:
//   rate+governance  each replica's pool rate set to its share of the limit (20/s), 429s governed;
//   governance       no pool rate: the pools find the limit by its 429s, and pause as a whole;
//   naive            per-worker retry (the seed's pre-actor code): the worker that got the 429 waits,
//                    its siblings keep calling.
// Printed per run: the configured and achieved rates, 429s, penalty escalations, the longest
// cessation, and how many messages succeeded or were dead-lettered, with the elapsed time.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include "api_server.hpp"
#include "bench_cli.hpp"
#include "cluster.hpp"

namespace {

using namespace dde::test;

struct run_result {
  std::string name;
  double configured = 0, achieved = 0, seconds = 0;
  std::size_t ok = 0, dead = 0;
  api_stats api;
  bool finished = false;
};

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  if (auto code = dde::bench::bench_command_line(
          argc, argv, "dde-bench-governance",
          "Rate-limit governance: violations and throughput against the test API server.", quick))
    return *code;
  const int n = quick ? 120 : 400;
  const auto limit = 40;
  const auto budget = quick ? 60s : 120s;
  auto dir = fresh_dir("bench-governance");
  rabbitmq_node broker("governance");
  broker.start();
  auto mqs = start_mqs(broker, dir, 16);
  auto registry = start_registry(dir);
  auto node_a = start_activator(registry, dir, "gov-a");
  auto node_b = start_activator(registry, dir, "gov-b");
  auto a = node_id(registry, "gov-a"), b = node_id(registry, "gov-b");
  auto deploy = [&](const nlohmann::json& body) {
    auto r = rest("POST", registry.url() + "/registry/deploy", body.dump());
    if (r.status != 200) throw std::runtime_error("deploy failed: " + r.body);
  };

  auto run = [&](const std::string& name, bool governance, int pool_rate) {
    api_server_options o;
    o.limits.limit = limit;
    o.limits.per = 1000ms;
    o.limits.penalty = 1000ms;
    o.limits.max_penalty = 30000ms;
    o.limits.grace = 200ms;
    api_server_thread api(o);
    auto sys = name + std::to_string(::getpid());
    std::vector<std::filesystem::path> logs;
    for (auto& node : {a, b}) {
      logs.push_back(dir / (sys + "-" + node + ".log"));
      auto body = deploy_body(node, mqs.url(), sys, "api", "api_caller",
                              {{"url", api.call_url()},
                               {"log", logs.back().string()},
                               {"governance", governance},
                               {"retryLimit", 10}},
                              {"localhost", "localhost", "localhost", "localhost"});
      body["backoff"] = {{"retryLimit", 10}};
      if (pool_rate > 0) body["rate"] = {{"messages", pool_rate}, {"perMs", 1000}};
      deploy(body);
    }
    auto start = std::chrono::steady_clock::now();
    deploy(deploy_body(a, mqs.url(), sys, "producer", "producer", {{"to", sys + "/api"}, {"count", n}}));
    run_result r;
    r.name = name;
    r.configured = pool_rate > 0 ? 2.0 * pool_rate : double(limit);
    auto settled = [&] {
      std::set<std::int64_t> ok;
      for (auto& l : logs) ok.merge(read_api_successes(l));
      r.ok = ok.size();
      r.dead = broker.queue_depth("dde.dead." + sys + ".api").value_or(0);
      return r.ok + r.dead >= std::size_t(n);
    };
    std::cerr << "[governance bench] " << name << ": " << n << " calls...\n";
    r.finished = wait_until(settled, budget, 50ms);
    settled();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.achieved = double(r.ok) / r.seconds;
    r.api = api.stats();
    // Stop the pools so the next run starts from a quiet server.
    for (auto& node : {a, b})
      rest("POST", registry.url() + "/registry/system/shutdown",
           nlohmann::json{{"bootstrapperId", node}, {"isolateSystemName", sys}}.dump());
    return r;
  };

  std::vector<run_result> results;
  results.push_back(run("rategov", true, limit / 2));
  results.push_back(run("governance", true, 0));
  results.push_back(run("naive", false, 0));

  std::printf(
      "\nRate-limit governance: %d calls, 8 workers in 2 isolate systems, API limit %d/s, penalty 1 s x2 per "
      "call in a cessation (max 30 s)\n",
      n, limit);
  std::printf("%-12s %11s %10s %6s %6s %6s %12s %14s %9s\n", "run", "configured", "achieved", "ok", "dead",
              "429s", "escalations", "max cessation", "elapsed");
  for (auto& r : results)
    std::printf("%-12s %9.0f/s %8.1f/s %6zu %6zu %6llu %12llu %11lld ms %8.1fs%s\n", r.name.c_str(),
                r.configured, r.achieved, r.ok, r.dead, static_cast<unsigned long long>(r.api.limited),
                static_cast<unsigned long long>(r.api.escalations),
                static_cast<long long>(r.api.max_penalty.count()), r.seconds,
                r.finished ? "" : " (unfinished)");
  return 0;
}
