// Hot deployment (thesis 3.3.1): replacing a pool's plugin file under load swaps the
// workers to the new version without losing or repeating a message; a bad new version is refused
// and the running one keeps serving.
#include <fstream>

#include "cluster_fixture.hpp"
#include "plugin_server.hpp"
#include "tls_server.hpp"

namespace dde::test {
namespace {

class HotDeploy : public Cluster {
 protected:
  void start_node(const std::map<std::string, std::string>& env = {}) {
    node_ = std::make_unique<activator_process>(start_activator(registry, dir, "hot-" + sys, 0, {}, env));
    id = node_id(registry, "hot-" + sys);
  }
  /// Two echo workers of the plugin at `uri`, its md5 checked every 100 ms.
  nlohmann::json echo_body(const std::string& uri) {
    auto body =
        deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"log_dir", dir}}, {"localhost", "localhost"});
    body["uri"] = uri;
    body["hotDeployment"] = true;
    body["hotDeploymentIntervalMs"] = 100;
    return body;
  }
  void deploy_echo() {
    start_node();
    std::filesystem::create_directories(dir / "plugins");
    plugin = dir / "plugins" / "libecho.so";
    install_file(worker_path("echo_v1"), plugin);
    auto r = deploy(echo_body(plugin.string()));
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
      if (p["id"] == sys + "/echo") return p.value("hotDeploy", nlohmann::json::object());
    return nlohmann::json::object();
  }
  std::size_t handled() { return read_echo_logs(dir).size(); }
  std::size_t unique_handled() {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir)) seen.insert(l.seq);
    return seen.size();
  }
  /// Every one of `n` messages handled, none twice without a redelivery, v1 until a point and v2 after.
  void expect_one_clean_swap(std::size_t n) {
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
    EXPECT_EQ(seen.size(), n) << "no message lost";
    EXPECT_GT(v2, 0u) << "the new version took over";
    EXPECT_LT(last_v1, first_v2)
        << "no v1 after the first v2: the old workers were gone before the new started";
  }
  /// Lines of the echo system's log that contain `text`.
  int host_log_lines(const std::string& text) {
    std::ifstream in(dir / ("hot-" + sys) / (sys + ".log"));
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
    return n;
  }

  std::string sys = unique_test_system("hot");
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
  expect_one_clean_swap(std::size_t(n));
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
  for (auto& line : read_echo_logs(dir))
    EXPECT_EQ(line.version, 1) << "seq " << line.seq << " ran a refused version";
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
  auto r = rest(
      "POST", registry.url() + "/registry/system/restart",
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
  auto bad = rest(
      "POST", registry.url() + "/registry/system/restart",
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
  EXPECT_NE(state.value("error", std::string()).find("crashed the isolate system"), std::string::npos)
      << state.dump();
}

TEST_F(HotDeploy, AnHttpPluginIsPolledWithItsETagAndANewVersionTakesOverUnderLoad) {
  plugin_server server(worker_path("echo_v1"), {true, "/libecho.so"});
  start_node();
  auto r = deploy(echo_body(server.url()));
  ASSERT_EQ(r.status, 200) << r.body;
  const int n = 6000;
  produce("producer", n, 0, 2000);
  ASSERT_TRUE(wait_until([&] { return handled() >= 1000; }, long_wait));
  // Polls carry the ETag of the running version: the server answers 304 and sends no body.
  ASSERT_TRUE(wait_until([&] { return server.not_modified() >= 3; }, 30s)) << server.requests();
  EXPECT_EQ(server.downloads(), 1u);
  server.serve(worker_path("echo_v2"));
  ASSERT_TRUE(wait_until([&] { return hot_state().value("swaps", 0) == 1; }, 60s)) << hot_state().dump();
  produce("after", 500, n);  // v2 surely has messages, even if the stream ended during the swap
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= std::size_t(n + 500); }, long_wait))
      << unique_handled();
  expect_one_clean_swap(std::size_t(n + 500));
  EXPECT_EQ(server.downloads(), 2u) << "the first version and the new one; every other poll was a 304";
  auto state = hot_state();
  EXPECT_EQ(state["state"], "running") << state.dump();
  EXPECT_FALSE(state.contains("fetchError")) << state.dump();
}

TEST_F(HotDeploy, BadVersionsAtTheUrlAreRefusedAndOneThatCrashesFallsBackToTheLastThatWorked) {
  plugin_server server(worker_path("echo_v1"), {true, "/libecho.so"});
  start_node();
  auto r = deploy(echo_body(server.url()));
  ASSERT_EQ(r.status, 200) << r.body;
  produce("before", 100, 0);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 100; }, long_wait));
  server.serve(worker_path("test_bad_abi"));
  ASSERT_TRUE(wait_until(
      [&] {
        auto error = hot_state().value("error", std::string());
        return error.find("ABI version 999") != std::string::npos &&
               error.find("downloaded from " + server.url()) != std::string::npos;
      },
      30s))
      << hot_state().dump();
  // A version that loads but kills the process on its first message: the activator restarts the
  // system on the kept copy of the last version that worked, and the URL's version stays refused.
  server.serve(worker_path("test_crash_on_message"));
  produce("after", 200, 100, 200);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 300; }, long_wait)) << unique_handled();
  for (auto& l : read_echo_logs(dir)) EXPECT_EQ(l.version, 1) << "seq " << l.seq;
  auto state = hot_state();
  EXPECT_EQ(state["state"], "refused") << state.dump();
  EXPECT_NE(state.value("error", std::string()).find("crashed the isolate system"), std::string::npos)
      << state.dump();
  EXPECT_EQ(state["swaps"], 0);
}

TEST_F(HotDeploy, AnUnreachablePluginServerIsLoggedOnceAndTheRunningVersionKeepsServing) {
  plugin_server server(worker_path("echo_v1"), {true, "/libecho.so"});
  start_node();
  auto r = deploy(echo_body(server.url()));
  ASSERT_EQ(r.status, 200) << r.body;
  server.fail_with(503);
  ASSERT_TRUE(wait_until(
      [&] { return hot_state().value("fetchError", std::string()).find("HTTP 503") != std::string::npos; },
      30s))
      << hot_state().dump();
  auto polls = server.requests();
  ASSERT_TRUE(wait_until([&] { return server.requests() >= polls + 5; }, 30s)) << "it keeps polling";
  produce("during", 100, 0);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 100; }, long_wait));
  for (auto& line : read_echo_logs(dir)) EXPECT_EQ(line.version, 1);
  EXPECT_EQ(host_log_lines("cannot fetch plugin " + server.url()), 1) << "logged once, not at every poll";
  server.fail_with(0);
  ASSERT_TRUE(wait_until([&] { return !hot_state().contains("fetchError"); }, 30s)) << hot_state().dump();
  EXPECT_EQ(host_log_lines("can be fetched again"), 1);
  EXPECT_EQ(hot_state()["swaps"], 0);
}

TEST_F(HotDeploy, AnHttpsPluginLoadsAndSwapsWhenTheNodeTrustsItsCA) {
  auto certs = make_test_certificates(dir / "tls");
  std::filesystem::create_directories(dir / "www");
  install_file(worker_path("echo_v1"), dir / "www" / "libecho.so");
  auto tls = start_tls_file_server(dir / "www", certs, dir / "s_server.log");
  start_node({{"DDE_CA_FILE", certs.ca.string()}});
  auto r = deploy(echo_body(tls.url("libecho.so")));
  ASSERT_EQ(r.status, 200) << r.body;
  produce("before", 200, 0);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 200; }, long_wait));
  // This server sends neither ETag nor Last-Modified: every poll downloads, the md5 tells.
  install_file(worker_path("echo_v2"), dir / "www" / "libecho.so");
  ASSERT_TRUE(wait_until([&] { return hot_state().value("swaps", 0) == 1; }, 60s)) << hot_state().dump();
  produce("after", 200, 200);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 400; }, long_wait));
  for (auto& line : read_echo_logs(dir))
    EXPECT_EQ(line.version, line.seq < 200 ? 1 : 2) << "seq " << line.seq;
}

TEST_F(HotDeploy, ABadPluginUrlIsAPreciseDeployErrorAndTheNodeKeepsServing) {
  plugin_server server(worker_path("echo_v1"), {true, "/libecho.so"});
  start_node();
  auto closed = "http://127.0.0.1:" + std::to_string(free_port()) + "/libecho.so";
  auto refused = deploy(echo_body(closed));
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("cannot fetch plugin " + closed + ": cannot connect to 127.0.0.1"),
            std::string::npos)
      << refused.body;
  EXPECT_NE(refused.body.find("refused"), std::string::npos) << refused.body;
  auto missing = deploy(echo_body(server.url("/nope.so")));
  EXPECT_EQ(missing.status, 400) << missing.body;
  EXPECT_NE(missing.body.find("cannot fetch plugin " + server.url("/nope.so") + ": HTTP 404"),
            std::string::npos)
      << missing.body;
  auto garbled = deploy(echo_body("http://:8080/libecho.so"));
  EXPECT_EQ(garbled.status, 400) << garbled.body;
  EXPECT_NE(garbled.body.find("not a valid http:// or https:// URL"), std::string::npos) << garbled.body;
  // The node and its isolate system carry on: the right URL deploys and serves.
  auto ok = deploy(echo_body(server.url()));
  ASSERT_EQ(ok.status, 200) << ok.body;
  produce("p", 50, 0);
  ASSERT_TRUE(wait_until([&] { return unique_handled() >= 50; }, long_wait));
  EXPECT_EQ(hot_state()["state"], "running");
}

}  // namespace
}  // namespace dde::test
