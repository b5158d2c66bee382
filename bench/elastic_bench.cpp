// Elastic pools benchmark, on a real local cluster, over several runs:
// - scale-up time: from the first moment the registry shows the pool's backlog above its target to
//   the moment the pool runs `max` workers (a 1-worker pool, scale 1..8, 100 per worker, sampled
//   every 250 ms, under a burst of 30,000 messages that take 2 ms each); and the time back to min
//   once the queue is drained (cool-down 2 s);
// - failover time: from `kill -9` of a node's activator and isolate system to (a) the registry
//   declaring it lost and (b) the first message handled on a surviving node (three nodes, heartbeat
//   1 s, timeout 3 s, a 400 msg/s at-least-once stream); and whether any message was lost.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench_cli.hpp"
#include "cluster.hpp"

namespace {

using namespace dde::test;
using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point from, clock_type::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

nlohmann::json pool_of(const registry_process& registry, const std::string& node, const std::string& sys,
                       const std::string& id) {
  auto show = rest("GET", registry.url() + "/registry/system/" + node).json;
  if (show.is_object())
    for (auto& p : show.value(sys, nlohmann::json::array()))
      if (p.value("id", "") == id) return p;
  return nullptr;
}

struct scale_run {
  double up_ms = -1, down_ms = -1;
};

scale_run run_scale(rabbitmq_node& broker, int run) {
  scale_run out;
  auto dir = fresh_dir("bench-scale-" + std::to_string(run));
  auto mqs = start_mqs(broker, dir, 16);
  auto registry = start_registry(dir);
  auto node = start_activator(registry, dir, "scale-node");
  auto id = node_id(registry, "scale-node");
  std::string sys = "scale" + std::to_string(::getpid()) + "r" + std::to_string(run);
  const int n = 30000;
  const std::size_t max = 8;
  auto body = deploy_body(id, mqs.url(), sys, "work", "consumer", {{"work_ms", 2}, {"log_dir", dir}});
  body["credits"] = 4;
  body["scale"] = {
      {"min", 1}, {"max", max}, {"targetBacklogPerWorker", 100}, {"cooldownMs", 2000}, {"sampleMs", 250}};
  if (rest("POST", registry.url() + "/registry/deploy", body.dump()).status != 200) return out;
  auto producer =
      deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/work"}, {"count", n}});
  if (rest("POST", registry.url() + "/registry/deploy", producer.dump()).status != 200) return out;
  std::optional<clock_type::time_point> above, at_max, drained;
  wait_until(
      [&] {
        auto p = pool_of(registry, id, sys, sys + "/work");
        if (p.is_null()) return false;
        auto now = clock_type::now();
        auto workers = p["scaling"].value("workers", std::size_t(0));
        if (!above && p["scaling"].value("backlog", std::uint64_t(0)) > 100 * workers) above = now;
        if (above && !at_max && workers == max) at_max = now;
        if (at_max && !drained && p["scaling"].value("backlog", 1) == 0) drained = now;
        return drained && workers == 1;
      },
      180s, 50ms);
  if (above && at_max) out.up_ms = ms_since(*above, *at_max);
  if (drained) out.down_ms = ms_since(*drained, clock_type::now());
  return out;
}

struct failover_run {
  double detected_ms = -1, handled_ms = -1;
  std::size_t lost = 0;
};

failover_run run_failover(rabbitmq_node& broker, int run) {
  failover_run out;
  auto dir = fresh_dir("bench-failover-" + std::to_string(run));
  auto mqs = start_mqs(broker, dir, 16);
  auto registry = start_registry(dir);
  auto a = start_activator(registry, dir, "fo-a");
  auto b = start_activator(registry, dir, "fo-b");
  auto c = start_activator(registry, dir, "fo-c");
  auto ida = node_id(registry, "fo-a"), idb = node_id(registry, "fo-b");
  std::string sys = "fover" + std::to_string(::getpid()) + "r" + std::to_string(run);
  const int n = 6000;
  auto body = deploy_body(ida, mqs.url(), sys, "work", "consumer", {{"work_ms", 1}, {"log_dir", dir}},
                          {"localhost", "localhost"});
  body["failover"] = true;
  if (rest("POST", registry.url() + "/registry/deploy", body.dump()).status != 200) return out;
  auto producer = deploy_body(idb, mqs.url(), sys + "p", "producer", "producer",
                              {{"to", sys + "/work"}, {"count", n}, {"rate", 400}});
  if (rest("POST", registry.url() + "/registry/deploy", producer.dump()).status != 200) return out;
  wait_until([&] { return read_seq_logs(dir).unique.size() >= 800; }, 120s);
  auto p = pool_of(registry, ida, sys, sys + "/work");
  int pid = p.is_null() ? -1 : p.value("pid", -1);
  if (pid <= 0) return out;
  auto old_log = dir / ("consumer-" + std::to_string(pid) + ".log");
  a.proc->kill9();
  ::kill(pid, SIGKILL);
  auto killed = clock_type::now();
  // A consumer log of another process with a line in it: a message handled elsewhere.
  auto handled_elsewhere = [&] {
    std::error_code ec;
    for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      auto name = entry.path().filename().string();
      if (name.rfind("consumer-", 0) != 0 || entry.path() == old_log) continue;
      if (std::filesystem::file_size(entry.path(), ec) > 0) return true;
    }
    return false;
  };
  std::optional<clock_type::time_point> detected, handled;
  wait_until(
      [&] {
        auto now = clock_type::now();
        if (!detected && !rest("GET", registry.url() + "/registry/failover")
                              .json.value("failovers", nlohmann::json::array())
                              .empty())
          detected = now;
        if (!handled && handled_elsewhere()) handled = now;
        return detected && handled;
      },
      120s, 20ms);
  if (detected) out.detected_ms = ms_since(killed, *detected);
  if (handled) out.handled_ms = ms_since(killed, *handled);
  wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, 120s, 200ms);
  out.lost = read_seq_logs(dir).missing(n).size();
  return out;
}

std::string fmt(double ms) {
  if (ms < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", ms);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  if (auto code = dde::bench::bench_command_line(
          argc, argv, "dde-bench-elastic", "Autoscaling: scale-up and scale-down times on a local cluster.",
          quick))
    return *code;
  const int runs = quick ? 1 : 3;
  rabbitmq_node broker("elastic");
  broker.start();
  std::vector<scale_run> scales;
  std::vector<failover_run> failovers;
  for (int r = 0; r < runs; ++r) {
    scales.push_back(run_scale(broker, r));
    std::cerr << "[bench] scale run " << r + 1 << "/" << runs << " done\n";
    failovers.push_back(run_failover(broker, r));
    std::cerr << "[bench] failover run " << r + 1 << "/" << runs << " done\n";
  }
  std::printf("DDE elastic pools benchmark: %d run(s)\n\n", runs);
  std::printf(
      "| run | scale-up 1 -> 8 workers, ms | back to 1 after drain, ms | node lost -> detected, ms | "
      "node lost -> first message handled elsewhere, ms | messages lost |\n|---|---|---|---|---|---|\n");
  for (int r = 0; r < runs; ++r)
    std::printf("| %d | %s | %s | %s | %s | %zu |\n", r + 1, fmt(scales[r].up_ms).c_str(),
                fmt(scales[r].down_ms).c_str(), fmt(failovers[r].detected_ms).c_str(),
                fmt(failovers[r].handled_ms).c_str(), failovers[r].lost);
  return 0;
}
