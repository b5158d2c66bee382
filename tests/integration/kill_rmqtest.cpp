// KILL (thesis 3.4.2 "How KILL works?") over the REST API on a real cluster: a killed
// worker finishes what it holds, runs before_kill and gets nothing more; a killed pool leaves its
// messages in the broker until a RESTART brings fresh workers, and none is lost.
#include <fstream>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

class Kill : public Cluster {
 protected:
  void deploy_echo(nlohmann::json args = nlohmann::json::object()) {
    node_ = std::make_unique<activator_process>(node("kill-" + sys));
    id = node_id(registry, "kill-" + sys);
    args["log_dir"] = dir;
    auto r = deploy(deploy_body(id, mqs.url(), sys, "echo", "echo_v1", args, {"localhost", "localhost"}));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void produce(int count, int rate) {
    auto r = deploy(deploy_body(id, mqs.url(), sys + "p", "producer", "producer",
                                {{"to", sys + "/echo"}, {"count", count}, {"rate", rate}}));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  rest_answer post(const std::string& what, nlohmann::json body) {
    body["bootstrapperId"] = id;
    body["isolateSystemName"] = sys;
    if (!body.contains("isolateName")) body["isolateName"] = "echo";
    return rest("POST", registry.url() + "/registry/system/" + what, body.dump());
  }
  nlohmann::json workers() {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo") return p["workers"];
    return nlohmann::json::array();
  }
  nlohmann::json worker(const std::string& worker_id) {
    for (auto& w : workers())
      if (w["id"] == worker_id) return w;
    return nlohmann::json::object();
  }
  std::string state_of(const std::string& worker_id) {
    return worker(worker_id).value("state", std::string());
  }
  std::uint64_t done_of(const std::string& worker_id) {
    return worker(worker_id).value("done", std::uint64_t(0));
  }
  std::size_t unique_handled() {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir)) seen.insert(l.seq);
    return seen.size();
  }
  /// What before_kill logged: worker id -> messages that instance had finished.
  std::map<std::string, std::uint64_t> before_kill_log() {
    std::map<std::string, std::uint64_t> out;
    for (auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().filename().string().rfind("killed-", 0) != 0) continue;
      std::ifstream in(entry.path());
      std::string worker_id;
      std::uint64_t done = 0;
      while (in >> worker_id >> done) out[worker_id] = done;
    }
    return out;
  }

  std::string sys = unique_system("kill");
  std::string id;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Kill, AKilledWorkerFinishesWhatItHoldsThenStopsWhileTheOtherCarriesOn) {
  deploy_echo({{"work_ms", 2}});  // each message takes a while, so the victim holds a queue when killed
  const int n = 3000;
  produce(n, 600);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 300; }, long_wait));
  auto ws = workers();
  ASSERT_EQ(ws.size(), 2u) << ws.dump();
  std::string victim = ws[0]["id"], other = ws[1]["id"];

  auto r = post("kill", {{"workerId", victim}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["killed"], nlohmann::json::array({victim})) << r.body;
  ASSERT_TRUE(wait_until([&] { return state_of(victim) == "killed"; }, 60s)) << workers().dump();
  auto victim_done = done_of(victim), other_done = done_of(other);
  EXPECT_EQ(state_of(other), "running");

  ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(n); }, long_wait)) << unique_handled();
  EXPECT_EQ(done_of(victim), victim_done) << "the router gave the killed worker nothing more";
  EXPECT_GT(done_of(other), other_done) << "the other worker carried on";
  // before_kill ran after the last message the victim finished: its count is the router's.
  auto killed = before_kill_log();
  ASSERT_TRUE(killed.count(victim)) << "before_kill ran";
  EXPECT_EQ(killed[victim], victim_done);
  EXPECT_EQ(killed.count(other), 0u);
  auto log = read_echo_logs(dir);
  EXPECT_EQ(unexplained_duplicates(log), 0u);
  // The victim finished its queue rather than handing messages back to the broker. (Flags alone
  // would not tell: a broker that nacks a publish under load has the MQS publish it again, flagged.)
  auto topics =
      rest("GET", "http://127.0.0.1:" + std::to_string(mqs.port) + "/topics?names=" + sys + ".echo", {});
  ASSERT_EQ(topics.status, 200) << topics.body;
  auto echo = topics.json["topics"][sys + ".echo"];
  EXPECT_EQ(echo.value("returned", -1), 0) << "deliveries given back to the queue: " << echo.dump();

  auto again = post("kill", {{"workerId", victim}});
  EXPECT_EQ(again.status, 409) << again.body;
  EXPECT_NE(again.body.find("already killed"), std::string::npos) << again.body;
  auto unknown = post("kill", {{"workerId", "no-such-worker"}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.json.value("error", std::string())
                .rfind("no worker \"no-such-worker\" in pool " + sys + "/echo", 0),
            0u)
      << unknown.body;
  auto no_pool = post("kill", {{"isolateName", "nope"}});
  EXPECT_EQ(no_pool.status, 404) << no_pool.body;
  EXPECT_NE(no_pool.body.find("no pool"), std::string::npos) << no_pool.body;
  auto bad = post("kill", {{"workerId", 42}});
  EXPECT_EQ(bad.status, 400) << bad.body;
}

TEST_F(Kill, AKilledPoolLeavesItsMessagesInTheBrokerAndARestartHandlesEveryOne) {
  deploy_echo();
  const int n = 4000;
  produce(n, 800);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 400; }, long_wait));
  auto before = workers();
  auto r = post("kill", nlohmann::json::object());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["killed"].size(), 2u) << r.body;
  ASSERT_TRUE(wait_until(
      [&] {
        auto ws = workers();
        return ws.size() == 2 && ws[0]["state"] == "killed" && ws[1]["state"] == "killed";
      },
      60s))
      << workers().dump();
  auto frozen = read_echo_logs(dir).size();
  auto handled_before = unique_handled();
  auto queue = sys + ".echo";
  // The producer goes on (at its pace, which a loaded machine slows: no wait here depends on it
  // still sending); everything the pool had not handled piles up in the broker and stays: ready,
  // or delivered to the killed pool's host within its credits and not acknowledged.
  auto in_broker = [&]() -> std::uint64_t {
    try {
      auto t = shared_broker().queue_totals(queue);
      return t ? t->messages : 0;
    } catch (const std::exception&) {
      return 0;  // rabbitmqctl failed this time: asked again
    }
  };
  ASSERT_TRUE(wait_until([&] { return in_broker() >= std::uint64_t(n) - handled_before; }, long_wait))
      << "every message not handled before the kill waits in the broker: " << handled_before
      << " handled, in the broker: " << in_broker()
      << ", ready: " << shared_broker().queue_depth(queue).value_or(0);
  EXPECT_EQ(read_echo_logs(dir).size(), frozen) << "nothing was handled while the pool was killed";
  EXPECT_EQ(post("kill", nlohmann::json::object()).status, 409) << "every worker is already killed";

  auto restarted = post("restart", nlohmann::json::object());
  ASSERT_EQ(restarted.status, 200) << restarted.body;
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(n); }, long_wait)) << unique_handled();
  auto log = read_echo_logs(dir);
  std::set<std::int64_t> seen;
  for (auto& l : log) seen.insert(l.seq);
  EXPECT_EQ(seen.size(), std::size_t(n)) << "no message lost";
  EXPECT_EQ(unexplained_duplicates(log), 0u);
  ASSERT_TRUE(wait_until([&] { return shared_broker().queue_depth(queue) == 0u; }, 60s));
  auto after = workers();
  ASSERT_EQ(after.size(), 2u);
  for (auto& w : after) {
    EXPECT_EQ(w["state"], "running") << after.dump();
    for (auto& b : before) EXPECT_NE(w["id"], b["id"]) << "RESTART spawned fresh instances";
  }
}

}  // namespace
}  // namespace dde::test
