// Node failure detection and failover, on three nodes (loopback ports, an activator
// each): a steady sequence-numbered at-least-once stream goes to a pool with `failover: true` on node
// a; `kill -9` of node a's activator and its isolate system makes the registry declare it lost after
// the heartbeat timeout and deploy the pool on nodes b and c, and no message is lost.
#include <signal.h>

#include <iostream>

#include "cluster_fixture.hpp"
#include "postgres_server.hpp"

namespace dde::test {
namespace {

class Failover : public Cluster {
 public:
  using Cluster::deploy;
  using Cluster::deploy_pool;
  using Cluster::dir;
  using Cluster::mqs;
  std::string sys = unique_system("fo");
};

/// The pools named `pool` on the nodes in `ids` that run, as GET /registry/system/{id} shows them.
std::size_t running_copies(const registry_process& registry, const std::vector<std::string>& ids,
                           const std::string& sys, const std::string& pool) {
  std::size_t n = 0;
  for (auto& id : ids)
    for (auto& p : pools_of(registry, id, sys))
      if (p.value("id", "") == pool && p.value("state", "") == "running") ++n;
  return n;
}

TEST_F(Failover, APoolOfALostNodeComesBackOnTheOthersAndNoMessageIsLost) {
  auto a = node("fo-a-" + sys);
  auto b = node("fo-b-" + sys);
  auto c = node("fo-c-" + sys);
  auto ida = node_id(registry, a.name), idb = node_id(registry, b.name), idc = node_id(registry, c.name);
  ASSERT_FALSE(ida.empty() || idb.empty() || idc.empty());
  auto r = deploy_pool(ida, sys, "work", "consumer", {{"work_ms", 1}}, 2, {{"failover", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  // The stream comes from node b (another isolate system), 400 a second for 15 s.
  const int n = 6000;
  r = deploy(deploy_body(idb, mqs.url(), sys + "p", "producer", "producer",
                         {{"to", sys + "/work"}, {"count", n}, {"rate", 400}}));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 800; }, long_wait));
  auto on_a = pools_of(registry, ida, sys);
  ASSERT_EQ(on_a.size(), 1u);
  int pid = on_a[0].value("pid", -1);
  ASSERT_GT(pid, 0);

  a.proc->kill9();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  auto killed = std::chrono::steady_clock::now();
  // The default heartbeat timeout is 3 s; the two copies (a worker each) come up on b and c.
  ASSERT_TRUE(wait_until(
      [&] {
        return running_copies(registry, {idb, idc}, sys, sys + "/work") == 2;
      },
      long_wait, 100ms));
  auto back =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  std::cout << "failover: the pool ran on the surviving nodes " << back.count() << " ms after the kill\n";
  EXPECT_LT(back, 15s) << "heartbeat timeout 3 s plus a few seconds (generous for a loaded machine)";
  for (auto& id : {idb, idc}) {
    auto pools = pools_of(registry, id, sys);
    ASSERT_EQ(pools.size(), 1u) << id;
    EXPECT_EQ(pools[0].value("workersCount", 0), 1) << "the pool's 2 workers spread over the 2 survivors";
    EXPECT_TRUE(pools[0].value("failover", false)) << "it fails over again if this node is lost too";
  }

  ASSERT_TRUE(
      wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait, 200ms))
      << read_seq_logs(dir).missing(n).size() << " missing";
  EXPECT_TRUE(read_seq_logs(dir).missing(n).empty());

  auto status = rest("GET", registry.url() + "/registry/failover").json;
  ASSERT_EQ(status["failovers"].size(), 1u) << status.dump();
  auto& f = status["failovers"][0];
  EXPECT_EQ(f["node"], ida);
  ASSERT_EQ(f["pools"].size(), 1u);
  EXPECT_EQ(f["pools"][0]["pool"], sys + "/work");
  for (auto& to : f["pools"][0]["to"]) EXPECT_EQ(to["status"], "deployed") << f.dump();
}

/// The stream of the remembering tests: a 2-worker failover pool on node `ida`
/// fed from node `idb` (4,000 messages at 250/s) through `registry`, running and remembered.
/// Returns the pid of node a's isolate system (-1 when something failed: the test has failed).
int stream_remembered_on(Failover& t, const registry_process& registry, const std::string& ida,
                         const std::string& idb, int n) {
  auto r = t.deploy_pool(ida, t.sys, "work", "consumer", {{"work_ms", 1}}, 2, {{"failover", true}});
  EXPECT_EQ(r.status, 200) << r.body;
  r = t.deploy(deploy_body(idb, t.mqs.url(), t.sys + "p", "producer", "producer",
                           {{"to", t.sys + "/work"}, {"count", n}, {"rate", 250}}));
  EXPECT_EQ(r.status, 200) << r.body;
  if (!wait_until([&] { return read_seq_logs(t.dir).unique.size() >= 400; }, long_wait)) return -1;
  // The registry has described node a since the deploy (and so remembered its pool).
  bool remembered = wait_until(
      [&] {
        auto status = rest("GET", registry.url() + "/registry/failover");
        for (auto& w : status.json["nodes"])
          if (w["bootstrapperId"] == ida && w["pools"] == 1) return true;
        return false;
      },
      30s);
  EXPECT_TRUE(remembered);
  auto pools = pools_of(registry, ida, t.sys);
  return remembered && !pools.empty() ? pools.at(0).value("pid", -1) : -1;
}

/// After node a was lost: `registry` runs its pool on node `idb` alone (both workers), every message
/// arrives, and the failover names node a as remembered from the store.
void expect_failed_over_remembered(Failover& t, const registry_process& registry, const std::string& ida,
                                   const std::string& idb, int n) {
  ASSERT_TRUE(wait_until([&] { return running_copies(registry, {idb}, t.sys, t.sys + "/work") == 1; },
                         long_wait, 100ms))
      << rest("GET", registry.url() + "/registry/failover").body;
  auto pools = pools_of(registry, idb, t.sys);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].value("workersCount", 0), 2) << "both workers on the one survivor";
  ASSERT_TRUE(
      wait_until([&] { return read_seq_logs(t.dir).unique.size() >= std::size_t(n); }, long_wait, 200ms))
      << read_seq_logs(t.dir).missing(n).size() << " missing";
  EXPECT_TRUE(read_seq_logs(t.dir).missing(n).empty());
  auto status = rest("GET", registry.url() + "/registry/failover").json;
  ASSERT_EQ(status["failovers"].size(), 1u) << status.dump();
  EXPECT_EQ(status["failovers"][0]["node"], ida);
  EXPECT_NE(status["failovers"][0]["reason"].get<std::string>().find(
                "remembered from before this registry started or took over"),
            std::string::npos)
      << status.dump();
}

TEST_F(Failover, ANodeLostWhileTheRegistryIsDownIsFailedOverOnceTheRegistryIsBackWithItsStateFile) {
  // The registry remembers each node and its pools in --state-file (SQLite). Node a dies
  // while the registry is down; the restarted registry waits the restore grace for it, then deploys
  // its failover pool on node b, and the stream loses nothing.
  auto state = (dir / "registry.db").string();
  const std::vector<std::string> remember = {"--state-file", state, "--restore-grace-ms", "6000"};
  registry = start_registry(dir, 0, {}, {}, remember);
  auto a = node("st-a-" + sys);
  auto b = node("st-b-" + sys);
  auto ida = node_id(registry, a.name), idb = node_id(registry, b.name);
  ASSERT_FALSE(ida.empty() || idb.empty());
  const int n = 4000;
  int pid = stream_remembered_on(*this, registry, ida, idb, n);
  ASSERT_GT(pid, 0);

  auto port = registry.port;
  registry.proc->kill9();
  a.proc->kill9();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  registry = start_registry(dir, port, {}, {}, remember);
  expect_failed_over_remembered(*this, registry, ida, idb, n);
}

TEST_F(Failover, WhenTheActiveRegistryAndANodeDieTogetherTheStandbyTakesOverAndFailsTheNodeOver) {
  // High availability: two registries share a PostgreSQL store; the nodes know both
  // (--registry r1,r2). Registry r1 (active) and node a die at once: r2 takes the store's lock, node b
  // moves to it, and node a, remembered but not back within the grace, is failed over to node b.
  postgres_server store("failover-pair");
  store.start();
  const std::vector<std::string> pair = {"--state-url", store.url(),          "--standby-poll-ms",
                                         "200",         "--restore-grace-ms", "6000"};
  registry.proc->stop();
  registry = start_registry(dir, 0, {}, {}, pair);  // r1: the fixture's deploy helpers talk to it
  auto& r1 = registry;
  ASSERT_TRUE(wait_until([&] { return rest("GET", r1.url() + "/registry/health").status == 200; }, 30s))
      << r1.proc->log();
  auto r2 = start_registry(dir, 0, {}, {}, pair);
  EXPECT_EQ(rest("GET", r2.url() + "/registry/health").json.value("leader", ""), r1.url());
  const std::vector<std::string> both = {"--registry", r1.ws_url() + "," + r2.ws_url()};
  auto a = start_activator(r1, dir, "ha-a-" + sys, 0, both);
  auto b = start_activator(r1, dir, "ha-b-" + sys, 0, both);
  auto ida = node_id(r1, a.name), idb = node_id(r1, b.name);
  ASSERT_FALSE(ida.empty() || idb.empty());
  const int n = 4000;
  int pid = stream_remembered_on(*this, r1, ida, idb, n);
  ASSERT_GT(pid, 0);

  r1.proc->kill9();
  a.proc->kill9();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_until([&] { return rest("GET", r2.url() + "/registry/health").status == 200; }, 30s))
      << r2.proc->log();
  ASSERT_TRUE(wait_until([&] { return node_id(r2, b.name) == idb; }, 60s))
      << "node b moves to r2 under its id";
  ASSERT_TRUE(
      wait_until([&] { return running_copies(r2, {idb}, sys, sys + "/work") == 1; }, long_wait, 100ms))
      << rest("GET", r2.url() + "/registry/failover").body;
  auto back =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed);
  std::cout << "registry pair: node a's pool ran on node b " << back.count()
            << " ms after registry r1 and node a were killed (grace 6000 ms)\n";
  expect_failed_over_remembered(*this, r2, ida, idb, n);
}

}  // namespace
}  // namespace dde::test
