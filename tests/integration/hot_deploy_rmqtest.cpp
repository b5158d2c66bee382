// Hot deployment (issue 4, thesis 3.3.1): replacing a pool's plugin file under load swaps the
// workers to the new version without losing or repeating a message; a bad new version is refused
// and the running one keeps serving.
#include <fstream>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {


class HotDeploy : public Cluster {
 protected:
  void deploy_echo() {
    node_ = std::make_unique<activator_process>(node("hot-" + sys));
    id = node_id(registry, "hot-" + sys);
    std::filesystem::create_directories(dir / "plugins");
    plugin = dir / "plugins" / "libecho.so";
    install_file(worker_path("echo_v1"), plugin);
    auto body = deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"log_dir", dir}}, {"localhost", "localhost"});
    body["uri"] = plugin.string();
    body["hotDeployment"] = true;
    body["hotDeploymentIntervalMs"] = 100;
    auto r = deploy(body);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  /// Producers run in an isolate system of their own, so a crash of the echo system leaves them be.
  void produce(const std::string& name, int count, int start, int rate = 0) {
    nlohmann::json args = {{"to", sys + "/echo"}, {"count", count}, {"start_seq", start}};
    if (rate) args["rate"] = rate;
    auto r = deploy(deploy_body(id, mqs.url(), sys + "p", name, "producer", args));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  nlohmann::json hot_state() {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo") return p.value("hotDeploy", nlohmann::json());
    return nullptr;
  }
  std::size_t handled() { return read_echo_logs(dir).size(); }
  std::size_t unique_handled() {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir)) seen.insert(l.seq);
    return seen.size();
  }

  std::string sys = unique_system("hot");
  std::string id;
  std::filesystem::path plugin;
  std::unique_ptr<activator_process> node_;
};

TEST_F(HotDeploy, ANewVersionTakesOverUnderLoadWithNoMessageLostOrRepeated) {
  deploy_echo();
  const int n = 6000;
  produce("producer", n, 0, 2000);
  ASSERT_TRUE(wait_until([&] { return handled() >= 1000; }, long_wait));
  install_file(worker_path("echo_v2"), plugin);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(n); }, long_wait)) << unique_handled();
  auto log = read_echo_logs(dir);
  std::set<std::int64_t> seen;
  std::size_t last_v1 = 0, first_v2 = log.size(), v2 = 0;
  for (std::size_t i = 0; i < log.size(); ++i) {
    seen.insert(log[i].seq);
    if (log[i].version == 1) last_v1 = i;
    if (log[i].version == 2) {
      ++v2;
      first_v2 = std::min(first_v2, i);
    }
  }
  // A broker hiccup may redeliver (at-least-once); the swap itself must never make a message run twice.
  EXPECT_EQ(unexplained_duplicates(log), 0u) << "no message handled twice without a redelivery";
  EXPECT_EQ(seen.size(), std::size_t(n)) << "no message lost";
  EXPECT_GT(v2, 0u) << "the new version took over";
  EXPECT_LT(last_v1, first_v2) << "no v1 after the first v2: the old workers were gone before the new started";
  auto state = hot_state();
  EXPECT_EQ(state["swaps"], 1) << state.dump();
  EXPECT_EQ(state["state"], "running");
}

TEST_F(HotDeploy, BadVersionsAreRefusedWithTheirReasonAndTheOldOneKeepsServing) {
  deploy_echo();
  auto not_elf = dir / "not-a-plugin.so";
  std::ofstream(not_elf) << "this is not a shared object\n";
  struct bad {
    std::filesystem::path file;
    std::string reason;
  };
  std::vector<bad> versions = {{not_elf, "not an ELF shared object"},
                               {worker_path("test_no_factory"), "is not a DDE worker"},
                               {worker_path("test_bad_abi"), "ABI version 999"},
                               {worker_path("test_throwing_ctor"), "cannot reach the database"}};
  int start = 0;
  for (auto& v : versions) {
    install_file(v.file, plugin);
    ASSERT_TRUE(wait_until(
        [&] {
          auto s = hot_state();
          return s.is_object() && s["state"] == "refused" &&
                 s.value("error", std::string()).find(v.reason) != std::string::npos;
        },
        30s))
        << v.file << ": " << hot_state().dump();
    produce("p" + std::to_string(start), 50, start);
    start += 50;
    ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(start); }, long_wait));
  }
  std::filesystem::remove(plugin);
  ASSERT_TRUE(wait_until(
      [&] { return hot_state().value("error", std::string()).find("missing") != std::string::npos; }, 30s));
  for (auto& line : read_echo_logs(dir)) EXPECT_EQ(line.version, 1) << "seq " << line.seq << " ran a refused version";
  EXPECT_EQ(hot_state()["swaps"], 0);
}

TEST_F(HotDeploy, RestartReplacesEveryWorkerAfterItsMessagesWithoutLoss) {
  deploy_echo();
  auto workers = [&] {
    std::set<std::string> ids;
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo")
        for (auto& w : p["workers"]) ids.insert(w["id"].get<std::string>());
    return ids;
  };
  auto before = workers();
  ASSERT_EQ(before.size(), 2u);
  const int n = 3000;
  produce("producer", n, 0, 1500);
  ASSERT_TRUE(wait_until([&] { return handled() >= 500; }, long_wait));
  auto r = rest("POST", registry.url() + "/registry/system/restart",
                nlohmann::json{{"bootstrapperId", id}, {"isolateSystemName", sys}, {"isolateName", "echo"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(n); }, long_wait));
  auto log = read_echo_logs(dir);
  std::set<std::int64_t> seen;
  for (auto& l : log) seen.insert(l.seq);
  EXPECT_EQ(unexplained_duplicates(log), 0u);
  EXPECT_EQ(seen.size(), std::size_t(n));
  auto after = workers();
  ASSERT_EQ(after.size(), 2u);
  for (auto& w : after) EXPECT_EQ(before.count(w), 0u) << "every worker is a fresh instance";
  auto bad = rest("POST", registry.url() + "/registry/system/restart",
                  nlohmann::json{{"bootstrapperId", id}, {"isolateSystemName", sys}, {"isolateName", "nope"}}.dump());
  EXPECT_EQ(bad.status, 404) << bad.body;
  EXPECT_NE(bad.body.find("no pool"), std::string::npos) << bad.body;
}

TEST_F(HotDeploy, AVersionThatCrashesTheIsolateSystemFallsBackToTheLastOneThatWorked) {
  deploy_echo();
  produce("before", 200, 0);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 200; }, long_wait));
  auto pid_of_echo = [&] {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo") return p.value("pid", -1);
    return -1;
  };
  int pid = pid_of_echo();
  install_file(worker_path("test_crash_on_message"), plugin);
  produce("after", 300, 200, 300);
  // The new version kills the process on its first message; the activator restarts the system on
  // the last version that worked and refuses the crashing one, while the uri is still watched.
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 500; }, long_wait)) << unique_handled();
  std::set<std::int64_t> seen;
  for (auto& l : read_echo_logs(dir)) {
    seen.insert(l.seq);
    EXPECT_EQ(l.version, 1);
  }
  EXPECT_EQ(seen.size(), 500u) << "the message that crashed the new version came back and was handled";
  EXPECT_NE(pid_of_echo(), pid);
  auto state = hot_state();
  EXPECT_EQ(state["state"], "refused") << state.dump();
  EXPECT_NE(state.value("error", std::string()).find("crashed the isolate system"), std::string::npos) << state.dump();
}

}  // namespace
}  // namespace dde::test
