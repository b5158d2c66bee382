// Canary hot deployment on a real cluster and broker: a pool of four echo_v1
// workers under a steady at-least-once load gets a new plugin file. A version that fails every
// message (faulty, with every seq in args.throw_on: echo ignores them) runs on one worker for the
// window, is rolled back and refused, and every message is still handled, by the old version; a good
// one (echo_v2) is promoted and takes the whole pool. /metrics counts messages per plugin md5.
#include <set>

#include "cluster_fixture.hpp"
#include "prometheus_text.hpp"

namespace dde::test {
namespace {

class Canary : public Cluster {
 protected:
  /// Four echo workers of the plugin at dir/plugins/libecho.so (echo_v1), polled every 100 ms; a
  /// canary of one worker judged after 2 s and 20 messages.
  void deploy_echo() {
    node_ = std::make_unique<activator_process>(start_activator(registry, dir, "canary-" + sys, 0));
    id = node_id(registry, "canary-" + sys);
    std::filesystem::create_directories(dir / "plugins");
    plugin = dir / "plugins" / "libecho.so";
    install_file(worker_path("echo_v1"), plugin);
    nlohmann::json every_seq = nlohmann::json::array();
    for (int i = 0; i < 2000; ++i) every_seq.push_back(i);
    auto body =
        deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"log_dir", dir}, {"throw_on", every_seq}},
                    std::vector<std::string>(4, "localhost"));
    body["uri"] = plugin.string();
    body["hotDeployment"] = true;
    body["hotDeploymentIntervalMs"] = 100;
    body["canary"] = {
        {"workers", 1}, {"windowMs", 2000}, {"minMessages", 20}, {"maxFailureRateIncrease", 0.1}};
    auto r = deploy(body);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  /// `count` messages from seq `start`, at `rate` a second, from an isolate system of their own.
  void produce(const std::string& name, int count, int start, int rate) {
    auto r =
        deploy(deploy_body(id, mqs.url(), sys + "p", name, "producer",
                           {{"to", sys + "/echo"}, {"count", count}, {"start_seq", start}, {"rate", rate}}));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  nlohmann::json echo_pool() {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo") return p;
    return nlohmann::json::object();
  }
  nlohmann::json hot_state() { return echo_pool().value("hotDeploy", nlohmann::json::object()); }
  /// Waits for a canary of the version just installed and gives its md5.
  std::string canary_md5() {
    std::string md5;
    wait_until(
        [&] {
          auto s = hot_state();
          if (s.contains("canary")) md5 = s["canary"].value("md5", std::string());
          return !md5.empty();
        },
        60s);
    return md5;
  }
  /// The canary that ended last, once it is that of `md5`.
  nlohmann::json outcome_of(const std::string& md5) {
    nlohmann::json last;
    wait_until(
        [&] {
          last = hot_state().value("lastCanary", nlohmann::json::object());
          return last.value("md5", std::string()) == md5;
        },
        long_wait);
    return last;
  }
  std::set<std::int64_t> seqs_handled(int version = 0) {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir))
      if (version == 0 || l.version == version) seen.insert(l.seq);
    return seen;
  }
  /// The isolate system's /metrics, parsed (its port from describe).
  prom_text scrape(std::string& raw) {
    std::uint16_t port = 0;
    wait_until([&] { return (port = echo_pool().value("opsPort", std::uint16_t(0))) != 0; }, 30s);
    auto r = rest("GET", "http://127.0.0.1:" + std::to_string(port) + "/metrics");
    raw = r.body;
    return parse_prometheus(r.body);
  }

  std::string sys = unique_system("canary");
  std::string id;
  std::filesystem::path plugin;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Canary, AFailingVersionIsRolledBackRefusedAndEveryMessageIsHandledByTheOldOne) {
  deploy_echo();
  const int n = 600;
  produce("producer", n, 0, 100);
  ASSERT_TRUE(wait_until([&] { return seqs_handled().size() >= 50; }, long_wait));
  auto old_md5 = echo_pool()["pluginMd5"].get<std::string>();
  install_file(worker_path("faulty"), plugin);
  auto bad = canary_md5();
  ASSERT_FALSE(bad.empty()) << hot_state().dump();
  auto last = outcome_of(bad);
  ASSERT_EQ(last.value("outcome", std::string()), "rolledBack") << hot_state().dump();
  EXPECT_GE(last["canary"]["failed"].get<int>(), 20) << last.dump();
  EXPECT_EQ(last["canary"]["handled"], 0) << last.dump();
  auto state = hot_state();
  EXPECT_EQ(state["state"], "refused") << state.dump();
  EXPECT_EQ(state["refusedMd5"], bad);
  EXPECT_NE(state.value("error", std::string()).find("canary rolled back"), std::string::npos)
      << state.dump();
  EXPECT_EQ(echo_pool()["pluginMd5"], old_md5);

  // At least once: what the canary failed went back to the queue and the old version handled it.
  ASSERT_TRUE(wait_until([&] { return seqs_handled().size() >= std::size_t(n); }, long_wait))
      << seqs_handled().size();
  EXPECT_EQ(seqs_handled(1).size(), std::size_t(n)) << "every message handled by the old version";
  EXPECT_EQ(unexplained_duplicates(read_echo_logs(dir)), 0u);
  EXPECT_EQ(echo_pool()["governance"]["deadLettered"], 0);
  EXPECT_FALSE(hot_state().contains("canary")) << "the refused file is not tried again";

  std::string raw;
  auto m = scrape(raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  auto pool = sys + ".echo";
  EXPECT_GE(m.value("dde_host_version_messages_total", {{"pool", pool}, {"md5", bad}, {"result", "failed"}})
                .value_or(0),
            20)
      << raw;
  EXPECT_EQ(m.value("dde_host_version_messages_total", {{"pool", pool}, {"md5", bad}, {"result", "handled"}}),
            0)
      << raw;
  EXPECT_GE(
      m.value("dde_host_version_messages_total", {{"pool", pool}, {"md5", old_md5}, {"result", "handled"}})
          .value_or(0),
      n)
      << raw;
  EXPECT_EQ(m.value("dde_host_canaries_total", {{"pool", pool}, {"outcome", "rolled_back"}}), 1) << raw;
  EXPECT_EQ(promtool_problems(raw, dir / "metrics.prom"), "");
}

TEST_F(Canary, AGoodVersionRunsOnOneWorkerThenIsPromotedToTheWholePool) {
  deploy_echo();
  const int n = 600;
  produce("producer", n, 0, 100);
  ASSERT_TRUE(wait_until([&] { return seqs_handled().size() >= 50; }, long_wait));
  install_file(worker_path("echo_v2"), plugin);
  auto good = canary_md5();
  ASSERT_FALSE(good.empty()) << hot_state().dump();
  auto during = echo_pool();
  EXPECT_NE(during["pluginMd5"], good) << "the old version runs the other workers meanwhile";
  auto last = outcome_of(good);
  ASSERT_EQ(last.value("outcome", std::string()), "promoted") << hot_state().dump();
  EXPECT_GE(last["canary"]["handled"].get<int>(), 20) << last.dump();
  EXPECT_EQ(echo_pool()["pluginMd5"], good);
  auto state = hot_state();
  EXPECT_EQ(state["state"], "running") << state.dump();
  EXPECT_EQ(state["swaps"], 1);
  produce("after", 200, n, 200);  // surely after the promotion
  ASSERT_TRUE(wait_until([&] { return seqs_handled().size() >= std::size_t(n + 200); }, long_wait))
      << seqs_handled().size();
  auto log = read_echo_logs(dir);
  EXPECT_EQ(unexplained_duplicates(log), 0u);
  std::size_t canary_v2 = 0;
  for (auto& l : log) {
    if (l.seq >= n) {
      EXPECT_EQ(l.version, 2) << "seq " << l.seq << " after the promotion";
    }
    canary_v2 += l.seq < n && l.version == 2;
  }
  EXPECT_GE(canary_v2, 20u) << "the canary handled messages while the old version handled the others";
  std::string raw;
  auto m = scrape(raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.value("dde_host_canaries_total", {{"pool", sys + ".echo"}, {"outcome", "promoted"}}), 1) << raw;
  EXPECT_GE(m.value("dde_host_version_messages_total",
                    {{"pool", sys + ".echo"}, {"md5", good}, {"result", "handled"}})
                .value_or(0),
            220)
      << raw;
}

}  // namespace
}  // namespace dde::test
