// Supervision: what a pool does when a worker throws, on a real cluster. The `faulty`
// worker throws on chosen messages; the pool's `supervision` says what follows.
#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

class Supervision : public Cluster {
 protected:
  /// Deploys a faulty pool with `supervision` and a producer of `n` messages; returns the node id.
  std::string run(const std::string& sys, nlohmann::json faulty_args, nlohmann::json supervision, int n,
                  int workers = 1) {
    auto id = deploy_faulty(sys, std::move(faulty_args), std::move(supervision), workers);
    produce(id, sys, n);
    return id;
  }
  std::string deploy_faulty(const std::string& sys, nlohmann::json faulty_args, nlohmann::json supervision,
                            int workers, nlohmann::json extra = nlohmann::json::object()) {
    node_ = std::make_unique<activator_process>(node("sup-" + sys));
    auto id = node_id(registry, "sup-" + sys);
    extra["supervision"] = supervision;
    auto r = deploy_pool(id, sys, "faulty", "faulty", faulty_args, workers, extra);
    EXPECT_EQ(r.status, 200) << r.body;
    return id;
  }
  void produce(const std::string& id, const std::string& sys, int n) {
    auto r = deploy(
        deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/faulty"}, {"count", n}}));
    EXPECT_EQ(r.status, 200) << r.body;
  }
  nlohmann::json faulty_pool(const std::string& id, const std::string& sys) {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/faulty") return p;
    return nullptr;
  }
  seq_report handled() { return read_seq_logs(dir, "faulty-"); }
  std::unique_ptr<activator_process> node_;
};

TEST_F(Supervision, RestartGivesAFreshInstanceAndRetriesTheFailedMessage) {
  auto sys = unique_system("suprestart");
  auto id = run(sys, {{"throw_once_on", {10}}}, {{"strategy", "restart"}}, 200);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 200; }, long_wait));
  EXPECT_TRUE(handled().missing(200).empty());  // seq 10 came back and succeeded the second time
  auto p = faulty_pool(id, sys);
  EXPECT_EQ(p["stats"]["restarts"], 1) << p.dump();
  EXPECT_EQ(p["stats"]["failed"], 1);
  EXPECT_EQ(p["poolState"], "running");
}

TEST_F(Supervision, ResumeKeepsTheInstance) {
  auto sys = unique_system("supresume");
  auto id = run(sys, {{"throw_once_on", {3, 7}}}, {{"strategy", "resume"}}, 100);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 100; }, long_wait));
  auto p = faulty_pool(id, sys);
  EXPECT_EQ(p["stats"]["failed"], 2) << p.dump();
  EXPECT_EQ(p["stats"]["restarts"], 0);
}

TEST_F(Supervision, DeadLetterSendsTheFailedMessageToTheDeadLetterQueue) {
  auto sys = unique_system("supdead");
  run(sys, {{"throw_on", {42}}}, {{"strategy", "resume"}, {"failedMessage", "dead-letter"}}, 100);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 99; }, long_wait));
  // Never silently dropped: it waits in dde.dead.<queue>.
  ASSERT_TRUE(
      wait_until([&] { return shared_broker().queue_depth("dde.dead." + sys + ".faulty") == 1u; }, 30s));
  EXPECT_EQ(handled().missing(100), std::vector<std::int64_t>{42});
  auto dead = shared_broker().get("dde.dead." + sys + ".faulty");
  ASSERT_TRUE(dead);
  EXPECT_NE(dead->find("\"seq\":42"), std::string::npos) << *dead;
}

TEST_F(Supervision, StopTakesTheFailingWorkerOutAndTheOthersCarryOn) {
  auto sys = unique_system("supstop");
  auto id = run(sys, {{"throw_once_on", {5}}}, {{"strategy", "stop"}}, 300, 2);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 300; }, long_wait));
  auto p = faulty_pool(id, sys);
  int down = 0;
  for (auto& w : p["workers"]) down += w["state"] == "down";
  EXPECT_EQ(down, 1) << p.dump();
}

TEST_F(Supervision, TheRestartLimitStopsACrashLoop) {
  auto sys = unique_system("suplimit");
  std::vector<int> all(50);
  for (int i = 0; i < 50; ++i) all[std::size_t(i)] = i;
  auto id =
      run(sys, {{"throw_on", all}}, {{"strategy", "restart"}, {"maxRestarts", 3}, {"withinMs", 60000}}, 50);
  ASSERT_TRUE(wait_until(
      [&] {
        auto p = faulty_pool(id, sys);
        return p.is_object() && p.value("poolState", std::string()).rfind("stopped", 0) == 0;
      },
      60s))
      << faulty_pool(id, sys).dump();
  auto p = faulty_pool(id, sys);
  EXPECT_EQ(p["stats"]["restarts"], 3) << p.dump();
  EXPECT_NE(p["poolState"].get<std::string>().find("asked to throw"), std::string::npos);
  // The messages are not lost: they wait in the broker for a fixed version.
  EXPECT_TRUE(
      wait_until([&] { return shared_broker().queue_depth(sys + ".faulty").value_or(0) >= 45u; }, 30s));
}

TEST_F(Supervision, APoisonMessageGoesToTheDeadLetterQueueWithItsFailureAndThePoolGoesOn) {
  // A message the worker always throws on (a poison message) does not stop the pool.
  auto sys = unique_system("suppoison");
  auto id = run(sys, {{"throw_on", {42}}}, {{"strategy", "restart"}, {"maxFailures", 3}}, 100);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 99; }, long_wait));
  ASSERT_TRUE(
      wait_until([&] { return shared_broker().queue_depth("dde.dead." + sys + ".faulty") == 1u; }, 30s));
  EXPECT_EQ(handled().missing(100), std::vector<std::int64_t>{42});
  auto dead = shared_broker().get("dde.dead." + sys + ".faulty");
  ASSERT_TRUE(dead);
  auto j = nlohmann::json::parse(*dead);
  EXPECT_EQ(j["body"]["seq"], 42) << *dead;
  EXPECT_EQ(j["deadLetter"]["attempts"], 3) << *dead;
  EXPECT_EQ(
      j["deadLetter"]["reason"],
      "failed 3 times (supervision.maxFailures 3); last failure: on_receive threw: asked to throw on 42");
  auto p = faulty_pool(id, sys);
  EXPECT_EQ(p["poolState"], "running") << p.dump();
  EXPECT_EQ(p["stats"]["failed"], 3);
  EXPECT_EQ(p["governance"]["deadLettered"], 1);
}

TEST_F(Supervision, AStoppedPoolStartsAgainWithRestartAndLosesNothing) {
  auto sys = unique_system("suprevive");
  // Four failures (each message throws once per process): the fourth stops the pool.
  auto id = run(sys, {{"throw_once_on", {1, 2, 3, 4}}},
                {{"strategy", "restart"}, {"maxRestarts", 3}, {"withinMs", 600000}, {"maxFailures", 0}}, 100);
  auto state = [&] {
    auto p = faulty_pool(id, sys);
    return p.is_object() ? p.value("poolState", std::string()) : std::string();
  };
  ASSERT_TRUE(wait_until([&] { return state().rfind("stopped", 0) == 0; }, long_wait)) << state();
  auto body =
      nlohmann::json{{"bootstrapperId", id}, {"isolateSystemName", sys}, {"isolateName", "faulty"}}.dump();
  auto refused = rest("POST", registry.url() + "/registry/system/kill", body);
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_NE(refused.body.find("RESTART starts it again"), std::string::npos) << refused.body;
  auto r = rest("POST", registry.url() + "/registry/system/restart", body);
  ASSERT_EQ(r.status, 200) << r.body;
  // The messages it gave back when it stopped are handled now, each thrown once already.
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 100; }, long_wait))
      << faulty_pool(id, sys).dump();
  EXPECT_TRUE(handled().missing(100).empty());
  EXPECT_EQ(state(), "running");
}

TEST_F(Supervision, EscalateRestartsTheWholePool) {
  auto sys = unique_system("supesc");
  auto id = deploy_faulty(sys, {{"throw_once_on", {20}}}, {{"strategy", "escalate"}}, 2);
  std::set<std::string> before;
  auto deployed = faulty_pool(id, sys);
  for (auto& w : deployed["workers"]) before.insert(w["id"].get<std::string>());
  ASSERT_EQ(before.size(), 2u) << deployed.dump();
  produce(id, sys, 100);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 100; }, long_wait));
  auto p = faulty_pool(id, sys);
  EXPECT_EQ(p["stats"]["restarts"], 1) << p.dump();
  EXPECT_TRUE(handled().missing(100).empty());
  for (auto& w : p["workers"]) {
    EXPECT_EQ(w["state"], "running") << p.dump();
    EXPECT_EQ(before.count(w["id"].get<std::string>()), 0u) << "every worker is a new instance";
  }
}

TEST_F(Supervision, ThePingGuardCatchesAWorkerThatNeverCallsDone) {
  auto sys = unique_system("supping");
  auto id = deploy_faulty(sys, {{"hang_once_on", {5}}}, {{"strategy", "restart"}}, 1,
                          {{"pingAfterMs", 300}, {"pongTimeoutMs", 1000}});
  produce(id, sys, 100);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= 100; }, long_wait));
  EXPECT_TRUE(handled().missing(100).empty());  // seq 5 was failed, retried, and done the second time
  auto p = faulty_pool(id, sys);
  EXPECT_NE(p.value("lastError", std::string()).find("did not call done()"), std::string::npos) << p.dump();
  EXPECT_EQ(p["stats"]["restarts"], 1);
}

}  // namespace
}  // namespace dde::test
