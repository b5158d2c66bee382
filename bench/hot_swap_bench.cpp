// Hot-swap benchmark: the pause of a plugin swap under steady load, over 20 swaps
// (echo_v1 <-> echo_v2), on a real local cluster. The pause of one swap is the time from the last
// message the old version handled to the first the new one handled. Printed next to the baseline
// of the same run: the gaps between consecutive messages when nothing is swapped. Also the
// throughput dip (the slowest 100 ms window vs the median one) and loss/duplicates (must be 0/0).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "bench_cli.hpp"
#include "cluster.hpp"

namespace {

using namespace dde::test;

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, std::size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  if (auto code = dde::bench::bench_command_line(argc, argv, "dde-bench-hotswap",
                                                 "The pause of a hot plugin swap under steady load.", quick))
    return *code;
  const int swaps = quick ? 6 : 20;
  const int rate = 2000;
  auto dir = fresh_dir("bench-hotswap");
  rabbitmq_node broker("hotswap");
  broker.start();
  auto mqs = start_mqs(broker, dir, 16);
  auto registry = start_registry(dir);
  auto node = start_activator(registry, dir, "bench-node");
  auto id = node_id(registry, "bench-node");
  std::string sys = "hotswap" + std::to_string(::getpid());
  auto plugin = dir / "libecho.so";
  install_file(worker_path("echo_v1"), plugin);
  auto body =
      deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"log_dir", dir}}, {"localhost", "localhost"});
  body["uri"] = plugin.string();
  body["hotDeployment"] = true;
  body["hotDeploymentIntervalMs"] = 50;
  if (rest("POST", registry.url() + "/registry/deploy", body.dump()).status != 200) return 1;
  const int total = rate * (swaps + 2);  // about one second of traffic per swap, and some before and after
  auto producer = deploy_body(id, mqs.url(), sys, "producer", "producer",
                              {{"to", sys + "/echo"}, {"count", total}, {"rate", rate}});
  if (rest("POST", registry.url() + "/registry/deploy", producer.dump()).status != 200) return 1;
  auto swaps_done = [&] {
    auto show = rest("GET", registry.url() + "/registry/system/" + id).json;
    for (auto& p : show.value(sys, nlohmann::json::array()))
      if (p["id"] == sys + "/echo") return p["hotDeploy"].value("swaps", 0);
    return -1;
  };
  wait_until([&] { return read_echo_logs(dir).size() >= std::size_t(rate); }, 60s);
  for (int k = 1; k <= swaps; ++k) {
    install_file(worker_path(k % 2 ? "echo_v2" : "echo_v1"), plugin);
    if (!wait_until([&] { return swaps_done() >= k; }, 30s)) {
      std::cerr << "swap " << k << " did not happen\n";
      return 1;
    }
    std::cerr << "[bench] swap " << k << "/" << swaps << " done\n";
    wait_until([&] { return read_echo_logs(dir).size() >= std::size_t(rate) * std::size_t(k + 1); }, 60s);
  }
  wait_until([&] { return read_echo_logs(dir).size() >= std::size_t(total); }, 120s);
  auto log = read_echo_logs(dir);
  std::stable_sort(log.begin(), log.end(), [](auto& a, auto& b) { return a.time_us < b.time_us; });

  std::vector<double> pauses, gaps;
  for (std::size_t i = 1; i < log.size(); ++i) {
    double gap_ms = double(log[i].time_us - log[i - 1].time_us) / 1000.0;
    if (log[i].version != log[i - 1].version)
      pauses.push_back(gap_ms);
    else
      gaps.push_back(gap_ms);
  }
  std::set<std::int64_t> unique;
  for (auto& l : log) unique.insert(l.seq);
  std::map<std::int64_t, int> per_window;
  for (auto& l : log) ++per_window[l.time_us / 100000];
  std::vector<double> windows;
  for (auto it = std::next(per_window.begin()); it != per_window.end() && std::next(it) != per_window.end();
       ++it)
    windows.push_back(it->second * 10.0);  // msg/s in that 100 ms window (first and last are partial)

  std::printf("DDE hot-swap benchmark: %d swaps of a 2-worker echo pool under %d msg/s (at-least-once)\n",
              swaps, rate);
  std::printf("| | p50 ms | max ms |\n|---|---|---|\n");
  std::printf("| swap pause (last old -> first new message) | %.1f | %.1f |\n", pct(pauses, 0.5),
              pauses.empty() ? 0 : *std::max_element(pauses.begin(), pauses.end()));
  std::printf("| baseline: gap between messages, no swap | %.2f | %.1f |\n", pct(gaps, 0.5),
              gaps.empty() ? 0 : *std::max_element(gaps.begin(), gaps.end()));
  std::printf("throughput per 100 ms window: median %.0f msg/s, slowest %.0f msg/s\n", pct(windows, 0.5),
              windows.empty() ? 0 : *std::min_element(windows.begin(), windows.end()));
  std::printf(
      "messages: sent %d, handled %zu, unique %zu, lost %zu, duplicated %zu (of which not redelivered by the "
      "broker: %zu), swaps seen %zu\n",
      total, log.size(), unique.size(), std::size_t(total) - std::min<std::size_t>(unique.size(), total),
      log.size() - unique.size(), unexplained_duplicates(log), pauses.size());
  return 0;
}
