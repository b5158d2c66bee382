// GET /metrics and GET /health of every daemon, against a real cluster and real RabbitMQ nodes: the
// Prometheus text parses strictly, `promtool check metrics` finds nothing to say about it, and its
// counters equal the messages the test sent; a daemon whose broker, registry or MQS is gone says it
// is not ready, and why. An isolate system serves its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cluster_fixture.hpp"
#include "prometheus_text.hpp"

namespace dde::test {
namespace {

std::string http_base(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

/// GET /metrics of the daemon on `port`, parsed; the raw text goes to `raw`.
prom_text scrape(std::uint16_t port, std::string* raw = nullptr) {
  auto r = rest("GET", http_base(port) + "/metrics");
  if (raw) *raw = r.body;
  if (r.status != 200) {
    prom_text failed;
    failed.error = "HTTP " + std::to_string(r.status) + ": " + r.body;
    return failed;
  }
  return parse_prometheus(r.body);
}

/// What `promtool check metrics` says about the daemon's /metrics text: "" when nothing. The test
/// fails when promtool is not installed.
std::string promtool_problems(std::uint16_t port, const std::filesystem::path& dir) {
  auto r = rest("GET", http_base(port) + "/metrics");
  if (r.status != 200) return "HTTP " + std::to_string(r.status) + ": " + r.body;
  return test::promtool_problems(r.body, dir / ("metrics-" + std::to_string(port) + ".prom"));
}

/// Scrapes the daemon on `port` until series `name` with `labels` equals `expected` (30 s at most);
/// the last scrape, with an error saying what was missing if it never did.
prom_text scrape_until(std::uint16_t port, const std::string& name,
                       const std::map<std::string, std::string>& labels, double expected, std::string& raw) {
  prom_text m;
  if (wait_until([&] { return (m = scrape(port, &raw)).ok() && m.value(name, labels) == expected; }, 30s))
    return m;
  if (m.ok()) m.error = name + " never reached " + std::to_string(expected);
  return m;
}

TEST(PrometheusText, TheStrictParserRefusesMalformedText) {
  EXPECT_TRUE(parse_prometheus("# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\\\"\"} 3\n").ok());
  EXPECT_FALSE(parse_prometheus("a_total 3\n").ok()) << "a sample needs its TYPE";
  EXPECT_FALSE(parse_prometheus("# TYPE a gauge\na{x=\"1} 3\n").ok());
  EXPECT_FALSE(parse_prometheus("# TYPE a gauge\na 3\na 4\n").ok()) << "a series twice";
  EXPECT_FALSE(parse_prometheus("# TYPE a gauge\na three\n").ok());
  EXPECT_FALSE(parse_prometheus("# TYPE a gauge\n# TYPE b gauge\na 1\nb 1\na{x=\"y\"} 1\n").ok())
      << "samples of a family must be contiguous";
  EXPECT_FALSE(parse_prometheus("# TYPE a gauge\na 1").ok()) << "no final newline";
}

TEST_F(Cluster, MetricsOfEveryDaemonParseAndCountTheMessagesSent) {
  auto a = node("metrics-a");
  auto id = node_id(registry, "metrics-a");
  auto sys = unique_system("metrics");
  const int n = 600;
  ASSERT_EQ(deploy_pool(id, sys, "consumer", "consumer", nlohmann::json::object(), 2).status, 200);
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "producer", "producer",
                               {{"to", sys + "/consumer"}, {"count", n}}))
                .status,
            200);
  auto missing = deploy_body(id, mqs.url(), sys, "ghost", "consumer", nlohmann::json::object());
  missing["uri"] = (dir / "libnot-there.so").string();
  EXPECT_EQ(deploy(missing).status, 400);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait));

  const std::string topic = sys + ".consumer";
  std::string raw;
  // The last acks reach the broker just after the consumers logged the messages.
  // The MQS labels its per-topic series `pool`, with the value the isolate systems and the registry use.
  auto m = scrape_until(mqs.port, "dde_mqs_acked_total", {{"pool", topic}}, n, raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.types["dde_mqs_published_total"], "counter");
  EXPECT_EQ(m.value("dde_mqs_published_total", {{"pool", topic}}), n) << raw;
  EXPECT_EQ(m.value("dde_mqs_consumed_total", {{"pool", topic}}), n) << raw;
  EXPECT_EQ(m.value("dde_mqs_redelivered_total", {{"pool", topic}}), 0) << raw;
  EXPECT_EQ(m.value("dde_mqs_queue_messages", {{"queue", topic}}), 0) << raw;
  EXPECT_EQ(m.value("dde_mqs_broker_connected"), 1) << raw;
  EXPECT_GE(m.value("dde_mqs_websocket_clients").value_or(0), 1) << raw;
  EXPECT_GT(m.value("process_resident_memory_bytes").value_or(0), 1e6) << raw;
  // The build and the standard process figures, as every daemon has them.
  EXPECT_EQ(m.types["dde_build_info"], "gauge");
  EXPECT_GT(m.value("process_cpu_seconds_total").value_or(0), 0) << raw;
  EXPECT_GT(m.value("process_open_fds").value_or(0), 2) << raw;
  EXPECT_GT(m.value("process_start_time_seconds").value_or(0), 1.7e9) << raw;

  // The registry's per-pool figures come from the routers (through the activator) and the MQS.
  auto r = scrape_until(registry.port, "dde_pool_messages_out_total", {{"pool", topic}}, n, raw);
  ASSERT_TRUE(r.ok()) << r.error << "\n" << raw;
  EXPECT_EQ(r.value("dde_pool_messages_in_total", {{"pool", topic}, {"node", "metrics-a"}}), n) << raw;
  EXPECT_EQ(r.value("dde_pool_workers", {{"pool", topic}}), 2) << raw;
  EXPECT_EQ(r.value("dde_pool_in_flight", {{"pool", topic}}), 0) << raw;
  EXPECT_EQ(r.value("dde_pool_queue_messages", {{"pool", topic}}), 0) << raw;
  EXPECT_EQ(r.value("dde_pool_redelivered_total", {{"pool", topic}}), 0) << raw;
  EXPECT_EQ(r.value("dde_pool_worker_restarts_total", {{"pool", topic}}), 0) << raw;
  EXPECT_EQ(r.value("dde_registry_nodes"), 1) << raw;
  EXPECT_EQ(r.value("dde_registry_deploys_total", {{"result", "ok"}}), 2) << raw;
  EXPECT_EQ(r.value("dde_registry_deploys_total", {{"result", "failed"}}), 1) << raw;
  EXPECT_GT(r.value("process_resident_memory_bytes").value_or(0), 1e6) << raw;

  auto act = scrape(a.port, &raw);
  ASSERT_TRUE(act.ok()) << act.error << "\n" << raw;
  EXPECT_EQ(act.value("dde_activator_websocket_clients", {{"endpoint", "control"}}), 1) << raw;
  EXPECT_GT(act.value("process_resident_memory_bytes").value_or(0), 1e6) << raw;

  // promtool, Prometheus's own checker, has nothing to say about any daemon's text.
  for (auto [daemon, port] : {std::pair{"dde-mqs", mqs.port}, std::pair{"dde-registry", registry.port},
                              std::pair{"dde-activator", a.port}})
    EXPECT_EQ(promtool_problems(port, dir), "") << daemon;
}

/// The port of `sys`'s own /metrics and /health, as GET /registry/system/{id} shows it (0 if never).
std::uint16_t ops_port_of(const registry_process& registry, const std::string& id, const std::string& sys) {
  std::uint16_t port = 0;
  wait_until(
      [&] {
        for (auto& p : pools_of(registry, id, sys)) port = p.value("opsPort", std::uint16_t(0));
        return port != 0;
      },
      30s);
  return port;
}

TEST_F(Cluster, AnIsolateSystemServesMetricsThatCountItsMessagesAndHealthThatFollowsItsMqs) {
  // Its plugins may come from the built workers and dir/plugins only.
  const auto plugins = dir / "plugins";
  std::filesystem::create_directories(plugins);
  auto a = start_activator(
      registry, dir, "ops-a", 0,
      {"--plugin-allow", worker_path("consumer").parent_path().string(), "--plugin-allow", plugins.string()});
  auto id = node_id(registry, "ops-a");
  auto sys = unique_system("ops");
  const int n = 500;
  ASSERT_EQ(deploy_pool(id, sys, "consumer", "consumer", nlohmann::json::object(), 2).status, 200);
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "producer", "producer",
                               {{"to", sys + "/consumer"}, {"count", n}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait));
  auto port = ops_port_of(registry, id, sys);
  ASSERT_NE(port, 0) << "the activator does not show the system's opsPort";

  const std::map<std::string, std::string> consumer = {{"pool", sys + ".consumer"}};
  const std::map<std::string, std::string> producer = {{"pool", sys + ".producer"}};
  const std::map<std::string, std::string> idle = {{"pool", sys + ".idle"}};
  std::string raw;

  // A pool that has had no message yet: every per-pool series is there at 0, in the isolate system and
  // in the MQS it pulls from (before anything, the registry included, asked the MQS about it).
  ASSERT_EQ(deploy_pool(id, sys, "idle", "consumer", nlohmann::json::object(), 1).status, 200);
  auto zero = scrape_until(port, "dde_host_workers", idle, 1, raw);
  ASSERT_TRUE(zero.ok()) << zero.error << "\n" << raw;
  for (auto name :
       {"dde_host_messages_received_total", "dde_host_messages_handled_total",
        "dde_host_messages_failed_total", "dde_host_messages_dead_lettered_total",
        "dde_host_messages_redelivered_total", "dde_host_queue_seconds_count",
        "dde_host_handling_seconds_count", "dde_host_ask_seconds_count", "dde_host_ask_timeouts_total"})
    EXPECT_EQ(zero.value(name, idle), 0) << name << "\n" << raw;
  EXPECT_EQ(zero.value("dde_host_plugin_load_failures_total", {{"pool", sys + ".idle"}, {"reason", "abi"}}),
            0)
      << raw;
  auto mqs_zero = scrape_until(mqs.port, "dde_mqs_topic_consumers", idle, 1, raw);
  ASSERT_TRUE(mqs_zero.ok()) << mqs_zero.error << "\n" << raw;
  for (auto name : {"dde_mqs_published_total", "dde_mqs_consumed_total", "dde_mqs_acked_total",
                    "dde_mqs_redelivered_total"})
    EXPECT_EQ(mqs_zero.value(name, idle), 0) << name << "\n" << raw;

  // The last ack is counted just after the consumer logged the message.
  auto m = scrape_until(port, "dde_host_messages_acked_total", consumer, n, raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.types["dde_host_messages_received_total"], "counter");
  EXPECT_EQ(m.value("dde_host_messages_received_total", consumer), n) << raw;
  EXPECT_EQ(m.value("dde_host_messages_handled_total", consumer), n) << raw;
  EXPECT_EQ(m.value("dde_host_messages_redelivered_total", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_messages_failed_total", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_worker_restarts_total", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_in_flight", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_workers", consumer), 2) << raw;
  EXPECT_EQ(m.value("dde_host_messages_sent_total", producer), n) << raw;
  EXPECT_EQ(m.value("dde_host_messages_sent_total", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_hot_swaps_total", consumer), 0) << raw;
  EXPECT_EQ(m.value("dde_host_mqs_connected"), 1) << raw;
  EXPECT_EQ(m.value("dde_host_mqs_reconnects_total"), 0) << raw;
  EXPECT_GT(m.value("process_resident_memory_bytes").value_or(0), 1e6) << raw;
  // Per-pool handling time.
  EXPECT_EQ(m.types["dde_host_handling_seconds"], "histogram");
  EXPECT_EQ(m.value("dde_host_handling_seconds_count", consumer), n) << raw;
  EXPECT_EQ(m.value("dde_host_handling_seconds_bucket", {{"pool", sys + ".consumer"}, {"le", "+Inf"}}), n)
      << raw;
  // Time in queue: every message came through the MQS, stamped when it published it.
  EXPECT_EQ(m.types["dde_host_queue_seconds"], "histogram");
  EXPECT_EQ(m.value("dde_host_queue_seconds_count", consumer), n) << raw;
  EXPECT_GT(m.value("dde_host_queue_seconds_sum", consumer).value_or(0), 0) << raw;
  EXPECT_LT(m.value("dde_host_queue_seconds_sum", consumer).value_or(1e9), n * 60.0) << raw;
  EXPECT_EQ(m.types["dde_build_info"], "gauge");

  // Ask round trips, in the system that asks, per asked pool.
  const int asks = 40;
  ASSERT_EQ(deploy_pool(id, sys, "supplier", "supplier", nlohmann::json::object(), 1).status, 200);
  ASSERT_EQ(
      deploy_pool(id, sys, "requester", "requester", {{"to", sys + "/supplier"}, {"count", asks}}, 1).status,
      200);
  const std::map<std::string, std::string> supplier = {{"pool", sys + ".supplier"}};
  m = scrape_until(port, "dde_host_ask_seconds_count", supplier, asks, raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.types["dde_host_ask_seconds"], "histogram");
  EXPECT_EQ(m.value("dde_host_ask_timeouts_total", supplier), 0) << raw;
  EXPECT_GT(m.value("dde_host_ask_seconds_sum", supplier).value_or(0), 0) << raw;
  EXPECT_EQ(promtool_problems(port, dir), "") << "the isolate system's /metrics";

  // Plugins that do not load, deployed into the running system: refused, and counted by reason.
  auto missing = deploy_body(id, mqs.url(), sys, "ghost", "consumer", nlohmann::json::object());
  missing["uri"] = (plugins / "libnot-there.so").string();
  EXPECT_EQ(deploy(missing).status, 400);
  std::ofstream(plugins / "libjunk.so") << "not a shared object\n";
  auto junk = deploy_body(id, mqs.url(), sys, "junk", "consumer", nlohmann::json::object());
  junk["uri"] = (plugins / "libjunk.so").string();
  EXPECT_EQ(deploy(junk).status, 400);
  auto bad_sha = deploy_body(id, mqs.url(), sys, "badsha", "consumer", nlohmann::json::object());
  bad_sha["sha256"] = std::string(64, '0');
  EXPECT_EQ(deploy(bad_sha).status, 400);
  std::filesystem::create_directories(dir / "outside");
  install_file(worker_path("consumer"), dir / "outside" / "libconsumer.so");
  auto outside = deploy_body(id, mqs.url(), sys, "outside", "consumer", nlohmann::json::object());
  outside["uri"] = (dir / "outside" / "libconsumer.so").string();
  EXPECT_EQ(deploy(outside).status, 400);
  m = scrape(port, &raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.types["dde_host_plugin_load_failures_total"], "counter");
  EXPECT_EQ(
      m.value("dde_host_plugin_load_failures_total", {{"pool", sys + ".badsha"}, {"reason", "checksum"}}), 1)
      << raw;
  EXPECT_EQ(
      m.value("dde_host_plugin_load_failures_total", {{"pool", sys + ".outside"}, {"reason", "not_allowed"}}),
      1)
      << raw;
  EXPECT_EQ(m.value("dde_host_plugin_load_failures_total", {{"pool", sys + ".ghost"}, {"reason", "missing"}}),
            1)
      << raw;
  EXPECT_EQ(m.value("dde_host_plugin_load_failures_total", {{"pool", sys + ".junk"}, {"reason", "not_elf"}}),
            1)
      << raw;

  // /health follows the MQS link: not ready while the MQS is stopped, with the reason; ready again.
  const auto health = http_base(port) + "/health";
  rest_answer h = rest("GET", health);
  EXPECT_EQ(h.status, 200) << h.body;
  EXPECT_EQ(h.json.value("status", ""), "ready") << h.body;
  EXPECT_EQ(h.json.value("daemon", ""), "dde-isolate-system") << h.body;
  mqs.proc->stop();
  ASSERT_TRUE(wait_until([&] { return (h = rest("GET", health)).status == 503; }, 30s)) << h.body;
  EXPECT_EQ(h.json.value("status", ""), "not ready") << h.body;
  EXPECT_NE(h.json.value("reason", "").find("unreachable"), std::string::npos) << h.body;
  EXPECT_NE(h.json.value("reason", "").find(std::to_string(mqs.port)), std::string::npos) << h.body;
  m = scrape(port, &raw);
  ASSERT_TRUE(m.ok()) << m.error << "\n" << raw;
  EXPECT_EQ(m.value("dde_host_mqs_connected"), 0) << raw;
  mqs = start_mqs(shared_broker(), dir, 16, mqs.port);
  ASSERT_TRUE(wait_until([&] { return (h = rest("GET", health)).status == 200; }, 60s)) << h.body;
  m = scrape(port, &raw);
  EXPECT_EQ(m.value("dde_host_mqs_reconnects_total"), 1) << raw;
  EXPECT_EQ(m.value("dde_host_messages_handled_total", consumer), n) << raw;
}

TEST_F(Cluster, TheActivatorIsReadyOnlyWhileRegisteredAndTheRegistryAlways) {
  auto a = node("health-a");
  auto reg = rest("GET", registry.url() + "/health");
  EXPECT_EQ(reg.status, 200) << reg.body;
  EXPECT_EQ(reg.json.value("status", ""), "ready") << reg.body;
  EXPECT_EQ(reg.json.value("nodes", 0), 1) << reg.body;
  rest_answer act;
  ASSERT_TRUE(
      wait_until([&] { return (act = rest("GET", http_base(a.port) + "/health")).status == 200; }, 10s))
      << act.body;
  EXPECT_EQ(act.json.value("bootstrapperId", ""), node_id(registry, "health-a"));

  registry.proc->stop();
  ASSERT_TRUE(
      wait_until([&] { return (act = rest("GET", http_base(a.port) + "/health")).status == 503; }, 10s))
      << act.body;
  EXPECT_EQ(act.json.value("status", ""), "not ready");
  EXPECT_NE(act.json.value("reason", "").find("not registered with the registry"), std::string::npos)
      << act.body;
}

TEST(Health, TheMqsIsNotReadyWhileItsBrokerIsDownAndReadyAgainWhenItIsBack) {
  rabbitmq_node broker("mqs-health");
  broker.start();
  auto dir = fresh_dir("mqs-health");
  auto mqs = start_mqs(broker, dir);
  const auto url = http_base(mqs.port) + "/health";
  rest_answer h;
  ASSERT_TRUE(wait_until([&] { return (h = rest("GET", url)).status == 200; }, 30s)) << h.body;
  EXPECT_EQ(h.json.value("status", ""), "ready");

  broker.stop();
  ASSERT_TRUE(wait_until([&] { return (h = rest("GET", url)).status == 503; }, 30s)) << h.body;
  EXPECT_EQ(h.json.value("status", ""), "not ready");
  EXPECT_NE(h.json.value("reason", "").find("unreachable"), std::string::npos) << h.body;
  // /metrics still answers while the broker is down, saying so.
  auto m = scrape(mqs.port);
  ASSERT_TRUE(m.ok()) << m.error;
  EXPECT_EQ(m.value("dde_mqs_broker_connected"), 0);

  broker.start();
  ASSERT_TRUE(wait_until([&] { return (h = rest("GET", url)).status == 200; }, 60s)) << h.body;
  m = scrape(mqs.port);
  EXPECT_EQ(m.value("dde_mqs_broker_reconnects_total", {{"connection", "publish"}}), 1);
}

}  // namespace
}  // namespace dde::test
