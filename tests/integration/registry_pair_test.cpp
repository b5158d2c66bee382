// Two dde-registry processes on one PostgreSQL store (--state-url): one leads, the
// other stands by (it refuses nodes and REST calls, naming the active one) and takes over with the
// remembered nodes when the active one dies; an active registry that loses the store steps down.
// Real processes and a throw-away PostgreSQL server; fake nodes. The same with real nodes, a broker
// and a failover of real pools: tests/integration/failover_rmqtest.cpp.
#include <gtest/gtest.h>

#include "postgres_server.hpp"
#include "registry_test_process.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;
using dde::test::wait_until;

class RegistryPair : public ::testing::Test {
 protected:
  void SetUp() override { store.start(); }
  /// A registry on the shared store that polls it every 100 ms, with a heartbeat (so it describes
  /// its nodes and remembers their pools).
  std::unique_ptr<registry_process> registry() {
    return std::make_unique<registry_process>(
        std::vector<std::string>{"--state-url", store.url(), "--standby-poll-ms", "100", "--heartbeat-ms",
                                 "200", "--heartbeat-timeout-ms", "30000", "--restore-grace-ms", "60000"});
  }
  static bool active(registry_process& r) { return r.get("/registry/health").status == 200; }
  dde::test::postgres_server store{::testing::UnitTest::GetInstance()->current_test_info()->name()};
};

TEST_F(RegistryPair, TheStandbyRefusesNamingTheActiveAndTakesOverWithItsNodesWhenTheActiveDies) {
  auto r1 = registry();
  ASSERT_TRUE(wait_until([&] { return active(*r1); }, 30s)) << r1->log();
  for (const char* path : {"/registry/health", "/health"}) {
    auto up = r1->get(path);
    EXPECT_EQ(up.status, 200) << path;
    EXPECT_EQ(up.body["role"], "active") << path << " " << up.body.dump();
    EXPECT_EQ(up.body["store"], "PostgreSQL store " + store.url()) << path;
  }
  auto r2 = registry();
  // r2 waits: it lives (its log), but answers 503 naming r1, and refuses nodes.
  ASSERT_TRUE(
      wait_until([&] { return r2->get("/registry/health").body.value("leader", "") == r1->url(); }, 30s))
      << r2->log();
  auto health = r2->get("/registry/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body["status"], "standby");
  EXPECT_EQ(health.body["role"], "standby");
  auto list = r2->get("/registry/system/list");
  EXPECT_EQ(list.status, 503);
  EXPECT_EQ(error_of(list),
            "this registry is a standby (another registry leads); the active registry is " + r1->url());
  fake_node refused(r2->port(), named("refused"));
  ASSERT_TRUE(refused.wait_closed());
  ASSERT_EQ(refused.errors().size(), 1u);
  EXPECT_NE(refused.errors()[0].value("error", "").find("this registry is a standby"), std::string::npos);
  EXPECT_TRUE(refused.id().empty());

  // A node on r1 with a pool, remembered in the store.
  auto a = std::make_unique<fake_node>(r1->port(), named("node-a"));
  ASSERT_TRUE(a->wait_registered());
  auto ida = a->id();
  ASSERT_EQ(r1->post("/registry/deploy", thesis_deploy_body(ida)).status, 200) << r1->log();
  ASSERT_TRUE(wait_until(
      [&] {
        auto status = r1->get("/registry/failover").body;
        for (auto& w : status["nodes"])
          if (w["bootstrapperId"] == ida && w["pools"] == 1) return true;
        return false;
      },
      30s))
      << r1->get("/registry/failover").body.dump() << r1->log();
  // ddectl given both (the standby first) talks to the active one; given the standby alone, it says who
  // leads.
  auto both =
      dde::test::run_tool("ddectl", {"--registry", r2->url() + "," + r1->url(), "list", "-o", "json"});
  EXPECT_EQ(both.exit, 0) << both.err;
  EXPECT_NE(both.out.find(ida), std::string::npos) << both.out;
  auto standby = dde::test::run_tool("ddectl", {"--registry", r2->url(), "list"});
  EXPECT_EQ(standby.exit, 1);
  EXPECT_NE(standby.err.find("the active registry is " + r1->url()), std::string::npos) << standby.err;

  r1->kill9();
  ASSERT_TRUE(wait_until([&] { return active(*r2); }, 30s)) << r2->log();
  // r2 watches node a from the store (it never saw it): back within the grace, or failed over.
  auto watched = r2->get("/registry/failover").body["nodes"];
  ASSERT_EQ(watched.size(), 1u) << watched.dump();
  EXPECT_EQ(watched[0]["bootstrapperId"], ida);
  EXPECT_EQ(watched[0]["pools"], 1);
  EXPECT_TRUE(watched[0].contains("disconnectedMsAgo"));
  // Node a's activator moves on to r2 and gets its id back.
  auto again = named("node-a");
  again.previous_id = ida;
  fake_node back(r2->port(), again);
  ASSERT_TRUE(back.wait_registered()) << r2->log();
  EXPECT_EQ(back.id(), ida);
  ASSERT_TRUE(wait_until(
      [&] { return !r2->get("/registry/failover").body["nodes"][0].contains("disconnectedMsAgo"); }, 30s));
  EXPECT_EQ(r2->get("/registry/failover").body["failovers"].size(), 0u)
      << "it came back: nothing to fail over";
}

TEST_F(RegistryPair, AnActiveRegistryThatLosesTheStoreStepsDownAndLeadsAgainOnceTheStoreIsBack) {
  auto r1 = registry();
  ASSERT_TRUE(wait_until([&] { return active(*r1); }, 30s)) << r1->log();
  fake_node node(r1->port(), named("node-a"));
  ASSERT_TRUE(node.wait_registered());

  store.stop();
  // Another registry could take the lock now: r1 stops acting and lets its nodes go.
  ASSERT_TRUE(node.wait_closed(30s)) << r1->log();
  auto health = r1->get("/registry/health");
  EXPECT_EQ(health.status, 503);
  EXPECT_EQ(health.body["role"], "standby");
  EXPECT_EQ(r1->get("/registry/system/list").status, 503);
  EXPECT_NE(r1->log().find("stepping down to standby"), std::string::npos);

  store.start();
  ASSERT_TRUE(wait_until([&] { return active(*r1); }, 30s)) << r1->log();
  EXPECT_EQ(r1->get("/registry/system/list").status, 200);
  EXPECT_TRUE(r1->running());
}

}  // namespace
}  // namespace dde::registry::test
