// The fault-injection suite: under a steady producer -> echo load in at-least-once mode,
// one fault per test, injected mid-stream. Every message produced must be consumed at least once
// and the system must resume by itself; the suite prints a table (fault, produced, consumed, lost,
// duplicated, recovery time) at the end.
#include <signal.h>

#include "fault_harness.hpp"
#include "tcp_proxy.hpp"

namespace dde::test {
namespace {

const auto* const table_printer = ::testing::AddGlobalTestEnvironment(new fault_table_printer);

TEST_F(Fault, NothingIsLostWhenTheBrokerIsStoppedAndRestarted) {
  start_load();
  await_steady();
  auto injected = wall_us();
  broker().stop();
  broker().start();
  account("RabbitMQ stopped and restarted", injected, wall_us());
}

TEST_F(Fault, NothingIsLostWhenTheBrokerIsKilledAndRestarted) {
  start_load();
  await_steady();
  // RabbitMQ 3.10 loses a quorum queue killed before Ra registered its name on disk (about 1 s).
  ASSERT_TRUE(broker().wait_quorum_queues_registered());
  auto injected = wall_us();
  broker().kill9();
  broker().start();
  account("RabbitMQ kill -9 and restarted", injected, wall_us());
}

TEST_F(Fault, NothingIsLostWhenTheMqsIsKilledAndRestarted) {
  start_load();
  await_steady();
  auto injected = wall_us();
  mqs.proc->kill9();
  mqs = start_mqs(broker(), dir, 16, mqs.port);
  account("dde-mqs kill -9 and restarted", injected, wall_us());
}

TEST_F(Fault, NothingIsLostWhenASecondMqsTakesOverWhileTheFirstIsDown) {
  auto standby = start_mqs(broker(), dir, 16);
  // Both pools list the two MQS processes: they use the first and fail over to the second.
  start_load(mqs.url() + "," + standby.url(), nlohmann::json::object(), messages, rate, true);
  await_steady();
  auto injected = wall_us();
  mqs.proc->kill9();
  account("dde-mqs kill -9, a second one takes over", injected, injected);
  EXPECT_NE(standby.proc->log().find("host " + consumers), std::string::npos) << standby.proc->log();
}

TEST_F(Fault, NothingIsLostWhenTheConsumersIsolateSystemIsKilled) {
  start_load();
  await_steady();
  int pid = host_pid(consumers);
  ASSERT_GT(pid, 0);
  auto injected = wall_us();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  account("isolate system kill -9 (activator restarts it)", injected, injected);
  EXPECT_NE(host_pid(consumers), pid);
}

TEST_F(Fault, NothingIsLostWhenTheActivatorIsKilledAndRestarted) {
  start_load();
  await_steady();
  auto port = node_.port;
  auto injected = wall_us();
  node_.proc->kill9();
  ASSERT_TRUE(wait_until([&] { return node_id(registry, node_name).empty(); }, 30s));
  node_ = start_activator(registry, dir, node_name, port);
  auto repaired = wall_us();
  id = node_id(registry, node_name);
  account("dde-activator kill -9 and restarted", injected, repaired);
  EXPECT_EQ(pools_of(registry, id, consumers).size(), 1u) << "the new activator adopts the running systems";
}

TEST_F(Fault, NothingIsLostWhenTheRegistryIsKilledAndRestarted) {
  start_load();
  await_steady();
  auto port = registry.port;
  auto injected = wall_us();
  registry.proc->kill9();
  registry = start_registry(dir, port);
  ASSERT_TRUE(wait_until([&] { return node_id(registry, node_name) == id; }, 60s)) << node_.proc->log();
  account("dde-registry kill -9 and restarted", injected, injected);
  EXPECT_EQ(pools_of(registry, id, consumers).size(), 1u) << "the node told the new registry what runs";
}

TEST_F(Fault, NothingIsLostWhenTheWebSocketLinkIsCutMidFrame) {
  tcp_proxy proxy(mqs.port);
  start_load(proxy.ws_url());
  await_steady();
  auto injected = wall_us();
  proxy.sever();
  EXPECT_GE(proxy.cut_mid_chunk(), 1u);
  account("host <-> dde-mqs WebSocket cut mid-frame", injected, injected);
  EXPECT_GE(proxy.accepted(), 2u) << "the host reconnected";
}

TEST_F(Fault, NothingIsLostWhileAConsumerDoesNotReadItsSocketAndTheMqsStaysBounded) {
  tcp_proxy proxy(mqs.port);
  // Full speed: the producer outruns the stalled consumer by far.
  start_load(proxy.ws_url(), nlohmann::json::object(), 20000, 0);
  await_steady();
  auto before = rss_kib(mqs.proc->pid());
  auto injected = wall_us();
  proxy.stall(true);
  std::size_t peak = before;
  auto stalled_at = consumed();
  // The producer finishes its 20,000 while the consumer reads nothing: they wait in the broker.
  ASSERT_TRUE(wait_until(
      [&] {
        peak = std::max(peak, rss_kib(mqs.proc->pid()));
        for (auto& stats : all_stats(dir, "producer-"))
          if (stats.value("finished", false)) return true;
        return false;
      },
      long_wait, 100ms));
  EXPECT_LE(consumed(), stalled_at + 200) << "the stalled consumer cannot have taken much";
  proxy.stall(false);
  auto repaired = wall_us();
  account("consumer not reading its socket (" + std::to_string(before / 1024) + " -> " +
              std::to_string(peak / 1024) + " MiB MQS RSS)",
          injected, repaired);
  EXPECT_LT(peak, before + 64 * 1024) << "the MQS buffered what the broker should hold";
}

TEST_F(Fault, NothingIsLostWhenOneNodeOfATwoNodeBrokerClusterIsStopped) {
  rabbitmq_node first("fault-a"), second("fault-b");
  first.use_cookie("DDEFAULTSUITECOOKIE");
  second.use_cookie("DDEFAULTSUITECOOKIE");
  first.start();
  second.start();
  ASSERT_TRUE(second.join_cluster(first)) << "see " << second.dir();
  // The pools' quorum queues get a member on each node; with two members, stopping one loses the
  // majority: the queue waits (publishes unconfirmed, nothing delivered) until the node is back.
  auto clustered = start_mqs(first, dir, 16);
  start_load(clustered.url(), nlohmann::json::object(), messages, rate, true);
  await_steady();
  auto injected = wall_us();
  second.stop();
  second.start();
  account("one node of a two-node RabbitMQ cluster stopped", injected, wall_us());
  node_.proc->stop(15s);  // its isolate systems go while the cluster is still there
  clustered.proc->stop();
}

}  // namespace
}  // namespace dde::test
