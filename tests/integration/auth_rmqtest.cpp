// Security on a real cluster: with the cluster secret every link works (bootstrapper ->
// registry, host -> MQS, host -> activator control, proxy -> remote isolate deployer) and messages
// are delivered; without it, or with a wrong one, each link is refused and the daemons keep
// serving. Plugin integrity: a deploy with a wrong sha256 is refused, a hot swap to a file with
// another hash is refused while the old version keeps serving, a plugin outside --plugin-allow is
// refused.
#include <boost/asio/io_context.hpp>
#include <fstream>
#include <future>

#include "cluster_fixture.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/ws.hpp"
#include "dde/runtime/plugin_loader.hpp"
#include "ws_probe.hpp"

namespace dde::test {
namespace {

const std::string admin = "admin-6bc1bee22e409f96e93d7e11";
const std::string secret = "cluster-ae2d8a571e03ac9c9eb76fac";
const std::map<std::string, std::string> with_secret = {{"DDE_CLUSTER_SECRET", secret}};

std::string error_of(const rest_answer& r) {
  return r.json.is_object() ? r.json.value("error", std::string()) : std::string();
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// A cluster whose registry wants an admin token and whose daemons want the cluster secret.
class Secured : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    mqs = start_mqs(shared_broker(), dir, 16, 0, with_secret);
    registry = start_registry(dir, 0, {{"DDE_ADMIN_TOKEN", admin}, {"DDE_CLUSTER_SECRET", secret}});
  }
  rest_answer deploy(const nlohmann::json& body) {
    return rest("POST", registry.url() + "/registry/deploy", body.dump(), registry.token);
  }
  /// Deploys `n` messages from a producer to sys/consumer (pool already deployed) on node `id`.
  void produce(const std::string& id, const std::string& to, int n, const std::string& name = "producer",
               const std::string& plugin = "producer") {
    auto body = deploy_body(id, mqs.url(), sys + "p", name, "producer", {{"to", to}, {"count", n}});
    body["uri"] = plugin == "producer" ? worker_path("producer").string() : plugin;
    auto r = deploy(body);
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::string sys = unique_system("auth");
  std::filesystem::path dir;
  mqs_process mqs;
  registry_process registry;
};

TEST_F(Secured, WithTheSecretEveryLinkWorksAndMessagesAreDelivered) {
  auto a = start_activator(registry, dir, "auth-a-" + sys, 0, {}, with_secret);
  auto b = start_activator(registry, dir, "auth-b-" + sys, 0, {}, with_secret);
  auto id = node_id(registry, a.name);
  ASSERT_FALSE(id.empty());
  // One local worker and one on node b: the proxy's link to b's /activator carries the secret too.
  auto body =
      deploy_body(id, mqs.url(), sys, "consumer", "consumer", {{"log_dir", dir}}, {"localhost", b.url()});
  auto r = deploy(body);
  ASSERT_EQ(r.status, 200) << r.body;
  const int n = 400;
  produce(id, sys + "/consumer", n);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait))
      << read_seq_logs(dir).unique.size();
  EXPECT_TRUE(read_seq_logs(dir).missing(n).empty());
  std::size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir))
    files += e.path().filename().string().rfind("consumer-", 0) == 0;
  EXPECT_EQ(files, 2u) << "the local worker and the remote one on node b both handled messages";
  for (auto* log : {&registry.proc, &mqs.proc, &a.proc, &b.proc})
    EXPECT_EQ((*log)->log().find(secret), std::string::npos) << "a log shows the secret";
}

TEST_F(Secured, AWrongOrMissingSecretIsRefusedAtEachLinkAndTheDaemonsKeepServing) {
  // bootstrapper -> registry: an activator with a wrong secret never registers.
  auto wrong_dir = dir / "wrong";
  std::filesystem::create_directories(wrong_dir);
  child_process wrong(
      {bin_path("dde-activator").string(), "--registry", registry.ws_url(), "--port",
       std::to_string(free_port()), "--name", "wrong-" + sys, "--log-dir", wrong_dir.string()},
      dir / "activator-wrong.log", {{"DDE_CLUSTER_SECRET", "not-" + secret}});
  ASSERT_TRUE(wait_until(
      [&] { return wrong.log().find("registry " + registry.ws_url() + " unavailable") != std::string::npos; },
      30s))
      << wrong.log();
  EXPECT_NE(registry.proc->log().find("/registry: wrong cluster secret"), std::string::npos)
      << registry.proc->log();
  EXPECT_TRUE(node_id(registry, "wrong-" + sys).empty());

  // host -> MQS: an isolate system without the secret cannot attach.
  auto host = start_host(sys + "h", mqs.url(), {pool(sys + "h", "consumer", "consumer", {{"log_dir", dir}})},
                         dir / "host.log");
  ASSERT_TRUE(wait_until([&] { return host->log().find("unavailable") != std::string::npos; }, 30s))
      << host->log();
  EXPECT_NE(mqs.proc->log().find("/mqs: no cluster secret"), std::string::npos) << mqs.proc->log();

  // activator /activator (proxies) and /control (isolate systems): refused without the secret.
  auto good = start_activator(registry, dir, "good-" + sys, 0, {}, with_secret);
  EXPECT_FALSE(ws_opens(good.port, "/activator"));
  EXPECT_FALSE(ws_opens(good.port, "/control", {{"X-DDE-Cluster-Secret", "not-" + secret}}));
  EXPECT_TRUE(ws_opens(good.port, "/activator", {{"X-DDE-Cluster-Secret", secret}}));
  EXPECT_TRUE(wait_until(
      [&] { return count(good.proc->log(), "refused a WebSocket link from 127.0.0.1:") == 2; }, 10s))
      << good.proc->log();
  auto log = good.proc->log();

  // Every daemon still serves: the good node deploys, and messages go through the MQS.
  auto id = node_id(registry, good.name);
  ASSERT_FALSE(id.empty());
  auto r = deploy(deploy_body(id, mqs.url(), sys, "consumer", "consumer", {{"log_dir", dir}}));
  ASSERT_EQ(r.status, 200) << r.body;
  produce(id, sys + "/consumer", 100);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 100u; }, long_wait));
  EXPECT_TRUE(wrong.running());
  EXPECT_TRUE(host->running());
  for (auto& text : {registry.proc->log(), mqs.proc->log(), log})
    EXPECT_EQ(text.find(secret), std::string::npos);
}

TEST_F(Secured, ABadSha256OrAPluginOutsideTheAllowListIsRefusedAndAHotSwapToAnotherHashToo) {
  auto plugins = dir / "plugins";
  std::filesystem::create_directories(plugins);
  auto echo = plugins / "libecho.so";
  install_file(worker_path("echo_v1"), echo);
  install_file(worker_path("producer"), plugins / "libproducer.so");
  auto outside = dir / "plugins-evil";
  std::filesystem::create_directories(outside);
  install_file(worker_path("echo_v1"), outside / "libecho.so");
  auto node =
      start_activator(registry, dir, "sha-" + sys, 0, {"--plugin-allow", plugins.string()}, with_secret);
  auto id = node_id(registry, node.name);
  auto echo_body = [&](const std::string& uri, const std::string& sha) {
    auto body = deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"log_dir", dir}}, {"localhost"});
    body["uri"] = uri;
    if (!sha.empty()) body["sha256"] = sha;
    body["hotDeployment"] = true;
    body["hotDeploymentIntervalMs"] = 100;
    return body;
  };
  auto good_sha = runtime::file_sha256(echo);
  ASSERT_EQ(good_sha.size(), 64u);

  // Not a hash: 400 from the registry, nothing reaches the node.
  auto malformed = deploy(echo_body(echo.string(), "abc"));
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  EXPECT_NE(error_of(malformed).find("\"sha256\" must be the plugin's SHA-256 as 64 hexadecimal characters"),
            std::string::npos)
      << malformed.body;
  // Another file's hash: refused by the node, the reason shown.
  auto wrong = deploy(echo_body(echo.string(), std::string(64, '0')));
  EXPECT_NE(wrong.status, 200);
  EXPECT_NE(error_of(wrong).find("has SHA-256 " + good_sha + ", not the " + std::string(64, '0')),
            std::string::npos)
      << wrong.body;
  // Outside the allow list: elsewhere, or climbing out with "..".
  for (auto uri : {worker_path("echo_v1").string(), (plugins / ".." / "plugins-evil" / "libecho.so").string(),
                   "file://" + (outside / "libecho.so").string()}) {
    auto refused = deploy(echo_body(uri, ""));
    EXPECT_NE(refused.status, 200) << uri;
    EXPECT_NE(error_of(refused).find("outside the allowed plugin locations"), std::string::npos)
        << refused.body;
  }

  // The right hash deploys; a hot swap to a file with another hash is refused, v1 keeps serving.
  auto ok = deploy(echo_body(echo.string(), good_sha));
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto hot_state = [&] {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/echo") return p.value("hotDeploy", nlohmann::json::object());
    return nlohmann::json::object();
  };
  install_file(worker_path("echo_v2"), echo);
  ASSERT_TRUE(wait_until(
      [&] {
        auto s = hot_state();
        return s.value("state", std::string()) == "refused" &&
               s.value("error", std::string()).find("SHA-256") != std::string::npos;
      },
      30s))
      << hot_state().dump();
  produce(id, sys + "/echo", 50, "producer", (plugins / "libproducer.so").string());
  ASSERT_TRUE(wait_until([&] { return read_echo_logs(dir).size() >= 50u; }, long_wait));
  for (auto& line : read_echo_logs(dir))
    EXPECT_EQ(line.version, 1) << "seq " << line.seq << " ran the refused file";
  EXPECT_EQ(hot_state()["swaps"], 0);
}

}  // namespace
}  // namespace dde::test
