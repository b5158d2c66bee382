// TLS on every link of a cluster: registry https + wss, activator wss, MQS wss, MQS to
// RabbitMQ over amqps, each daemon verifying its clients' certificates; a producer/consumer pool
// deployed over https delivers every message. Then the refusals: a wrong CA, no client
// certificate, plain ws:// to a TLS port.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/asio/executor_work_guard.hpp>
#include <future>
#include <thread>

#include "cluster_fixture.hpp"
#include "dde/net/http_client.hpp"
#include "dde/net/tls.hpp"
#include "dde/net/ws.hpp"
#include "first_outcome.hpp"
#include "tls_server.hpp"

namespace dde::test {
namespace {

/// Records whether a WebSocket connection opened ("open") or why it failed.
class opener : public net::ws_handler, public first_outcome {
 public:
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    settle("open");
    conn->close("done");
  }
  void on_message(const std::shared_ptr<net::ws_connection>&, std::string, bool) override {}
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string& reason) override {
    settle("closed: " + reason);
  }
};

/// "open", or why connecting to `url` with `tls` failed.
std::string try_ws(const std::string& url, const net::tls_options& tls) {
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  std::thread t([&] { io.run(); });
  auto o = std::make_shared<opener>();
  auto outcome = o->outcome();
  net::client_options options;
  options.tls = tls;
  net::ws_connect(
      io, *net::parse_ws_url(url), o, [o](const std::string& why) { o->settle(why); }, options);
  std::string result = outcome.wait_for(30s) == std::future_status::ready ? outcome.get() : "timeout";
  guard.reset();
  io.stop();
  t.join();
  return result;
}

class Security : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = fresh_dir("security-certs");
    certs_ = new cluster_certificates(
        make_cluster_certificates(dir / "good", {"registry", "mqs", "activator", "client", "rabbitmq"}));
    others_ = new cluster_certificates(make_cluster_certificates(dir / "other", {"client"}));
  }
  static void TearDownTestSuite() {
    delete certs_;
    delete others_;
  }

  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // This process (rest(), node_id()) is a client with a certificate of the cluster's CA.
    net::set_default_client_tls(client());
  }
  void TearDown() override { net::set_default_client_tls({}); }

  static tls_settings daemon(const std::string& name) {
    return {certs_->cert(name), certs_->key(name), certs_->ca(), true};
  }
  static net::tls_options client() {
    return {certs_->cert("client"), certs_->key("client"), certs_->ca(), false};
  }

  static cluster_certificates* certs_;
  static cluster_certificates* others_;
  std::filesystem::path dir;
};

cluster_certificates* Security::certs_ = nullptr;
cluster_certificates* Security::others_ = nullptr;

TEST_F(Security, AWholeClusterRunsOverTlsAndDeliversEveryMessage) {
  rabbitmq_node broker("tls");
  broker.enable_tls(certs_->ca(), certs_->cert("rabbitmq"), certs_->key("rabbitmq"), true);
  broker.start();
  // Only the amqps port is given to the MQS: every message crosses TLS to the broker. rabbitmq-c
  // checks the broker's certificate against a host name (DNS:localhost), not an IP address.
  auto mqs = start_mqs(
      broker, dir, 16, 0, {}, daemon("mqs"),
      {"--broker-tls", "--broker-host", "localhost", "--broker-port", std::to_string(broker.tls_port()),
       "--broker-cert", certs_->cert("mqs").string(), "--broker-key", certs_->key("mqs").string()});
  auto registry = start_registry(dir, 0, {}, daemon("registry"));
  auto node = start_activator(registry, dir, "tls-a", 0, {}, {}, daemon("activator"));
  auto id = node_id(registry, "tls-a");
  ASSERT_FALSE(id.empty());

  auto list = rest("GET", registry.url() + "/registry/system/list");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json[0].value("activator", std::string()).rfind("wss://127.0.0.1:", 0), 0u) << list.body;

  auto sys = unique_system("tls");
  const int n = 2000;
  auto consumer = deploy_body(id, mqs.url(), sys, "consumer", "consumer",
                              {{"stats_dir", dir}, {"log_dir", dir}}, {"localhost", "localhost"});
  auto deployed = rest("POST", registry.url() + "/registry/deploy", consumer.dump());
  ASSERT_EQ(deployed.status, 200) << deployed.body;
  auto producer =
      deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/consumer"}, {"count", n}});
  deployed = rest("POST", registry.url() + "/registry/deploy", producer.dump());
  ASSERT_EQ(deployed.status, 200) << deployed.body;
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait))
      << "missing " << read_seq_logs(dir).missing(n).size() << "\n"
      << mqs.proc->log();
  EXPECT_TRUE(read_seq_logs(dir).missing(n).empty());
  EXPECT_NE(mqs.proc->log().find("broker amqps://"), std::string::npos) << mqs.proc->log();

  // ddectl speaks https with the CA and the client certificate, and is refused without the latter.
  auto ddectl = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{bin_path("ddectl").string(), "--registry", registry.url(), "--ca",
                                  certs_->ca().string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("list");
    child_process p(argv, dir / "ddectl.log");
    auto status = p.wait_exit(60s);
    return std::pair{status && WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, p.log()};
  };
  auto [ok, ok_log] =
      ddectl({"--tls-cert", certs_->cert("client").string(), "--tls-key", certs_->key("client").string()});
  EXPECT_EQ(ok, 0) << ok_log;
  EXPECT_NE(ok_log.find(id), std::string::npos) << ok_log;
  auto [refused, refused_log] = ddectl({});
  EXPECT_EQ(refused, 3) << refused_log;
}

TEST_F(Security, WrongCaNoCertificateAndPlainWsAreRefusedAndTheRegistryKeepsServing) {
  auto registry = start_registry(dir, 0, {}, daemon("registry"));
  auto port = std::to_string(registry.port);
  const auto wss = "wss://127.0.0.1:" + port + "/registry";

  // A client that trusts another CA refuses the registry, and says why.
  auto wrong_ca = try_ws(wss, {certs_->cert("client"), certs_->key("client"), others_->ca(), false});
  EXPECT_NE(wrong_ca.find("certificate verify failed"), std::string::npos) << wrong_ca;
  // A daemon set up so logs it clearly and never registers.
  auto stray = std::make_unique<child_process>(
      std::vector<std::string>{bin_path("dde-activator").string(), "--registry", wss, "--port",
                               std::to_string(free_port()), "--name", "stray", "--log-dir", dir.string(),
                               "--tls-cert", others_->cert("client").string(), "--tls-key",
                               others_->key("client").string(), "--tls-ca", others_->ca().string()},
      dir / "stray.log");
  EXPECT_TRUE(
      wait_until([&] { return stray->log().find("certificate verify failed") != std::string::npos; }, 30s))
      << stray->log();
  EXPECT_TRUE(node_id(registry, "stray").empty());
  stray->stop();

  // The registry verifies clients: none without a certificate, none with one of another CA.
  EXPECT_NE(try_ws(wss, {"", "", certs_->ca(), false}), "open");
  EXPECT_NE(try_ws(wss, {others_->cert("client"), others_->key("client"), certs_->ca(), false}), "open");
  net::http_options no_cert;
  no_cert.ca_file = certs_->ca();
  EXPECT_FALSE(net::http_fetch("GET", registry.url() + "/registry/health", {}, {}, no_cert).answered());

  // Plain ws:// and http:// to the TLS port fail cleanly.
  auto plain = try_ws("ws://127.0.0.1:" + port + "/registry", {});
  EXPECT_NE(plain, "open");
  net::http_options plain_http;
  plain_http.timeout = 10s;
  auto res = net::http_fetch("GET", "http://127.0.0.1:" + port + "/registry/health", {}, {}, plain_http);
  EXPECT_TRUE(!res.answered() || res.status != 200);

  // And the registry still serves its clients.
  EXPECT_TRUE(registry.proc->running());
  EXPECT_EQ(try_ws(wss, client()), "open");
  EXPECT_EQ(rest("GET", registry.url() + "/registry/health").status, 200);
}

}  // namespace
}  // namespace dde::test
