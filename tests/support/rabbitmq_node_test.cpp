// Tests of the throw-away RabbitMQ node against a real rabbitmq-server.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "dde_test.hpp"

namespace dde::test {
namespace {

std::string process_name(int pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

/// True while `pid` exists and is not a zombie.
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return false;
  return state != "Z" && state != "X";
}

TEST(RabbitmqNode, StartsPublishesAndReportsQueueDepth) {
  rabbitmq_node node("depth");
  EXPECT_FALSE(node.running());
  node.start();
  ASSERT_TRUE(node.running());
  EXPECT_TRUE(port_open(node.port()));
  EXPECT_EQ(process_name(node.vm_pid()), "beam.smp");

  EXPECT_EQ(node.queue_depth("depth.missing"), std::nullopt);
  node.declare_queue("depth.q", /*quorum=*/false);
  EXPECT_EQ(node.queue_depth("depth.q"), 0u);
  node.publish("depth.q", {"one", "two", "three"});
  EXPECT_EQ(node.queue_depth("depth.q"), 3u);
  EXPECT_EQ(node.get("depth.q"), "one");
  EXPECT_EQ(node.queue_depth("depth.q"), 2u);
  EXPECT_EQ(node.get("depth.q"), "two");
  EXPECT_EQ(node.get("depth.q"), "three");
  EXPECT_EQ(node.get("depth.q"), std::nullopt);
  node.delete_queue("depth.q");
  EXPECT_EQ(node.queue_depth("depth.q"), std::nullopt);
  EXPECT_THROW(node.publish("depth.q", {"unroutable"}), std::exception);

  node.stop();
  EXPECT_FALSE(node.running());
  EXPECT_FALSE(port_open(node.port()));
}

TEST(RabbitmqNode, QueueTotalsCountUnackedAndDeadLetteredNotYetConfirmed) {
  rabbitmq_node node("totals");
  node.start();
  EXPECT_EQ(node.queue_totals("totals.missing"), std::nullopt);
  node.declare_queue("totals.plain", /*quorum=*/true);
  node.publish("totals.plain", {"a", "b"});
  auto plain = node.queue_totals("totals.plain");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->messages, 2u);
  EXPECT_EQ(plain->dlx, 0u);
  // A queue whose messages expire at once towards a queue that does not exist: dead-lettered
  // at-least-once, they wait in the source, ready nowhere.
  node.declare_queue("totals.expiring", /*quorum=*/true,
                     {{"x-overflow", "reject-publish"},
                      {"x-dead-letter-exchange", ""},
                      {"x-dead-letter-routing-key", "totals.nowhere"},
                      {"x-dead-letter-strategy", "at-least-once"}},
                     {{"x-message-ttl", 1}});
  node.publish("totals.expiring", {"x", "y", "z"});
  std::optional<rabbitmq_node::queue_totals_t> seen;
  EXPECT_TRUE(wait_until(
      [&] {
        seen = node.queue_totals("totals.expiring");
        return seen && seen->dlx == 3;
      },
      30s, 200ms))
      << "dlx " << (seen ? seen->dlx : 0);
  ASSERT_TRUE(seen);
  EXPECT_EQ(seen->messages, 3u) << "still held";
  EXPECT_EQ(node.queue_depth("totals.expiring"), 0u) << "but not ready";
  EXPECT_EQ(node.queue_depth("totals.nowhere"), std::nullopt);
}

TEST(RabbitmqNode, DurableQueueSurvivesKill9AndRestart) {
  rabbitmq_node node("kill9");
  node.start();
  node.declare_queue("kill9.quorum", /*quorum=*/true);
  node.publish("kill9.quorum", {"a", "b", "c", "d", "e"}, /*persistent=*/true);
  ASSERT_TRUE(wait_until([&] { return node.queue_depth("kill9.quorum") == 5u; }, 10s));
  // Without this, RabbitMQ 3.10 loses a quorum queue killed within ~1 s of its declaration.
  ASSERT_TRUE(node.wait_quorum_queues_registered());
  const int vm = node.vm_pid();
  const auto port = node.port();
  const auto node_name = node.node_name();

  node.kill9();
  EXPECT_FALSE(node.running());
  EXPECT_FALSE(alive(vm));
  EXPECT_FALSE(port_open(port));

  node.start();
  EXPECT_NE(node.vm_pid(), vm);
  EXPECT_EQ(node.port(), port);
  EXPECT_EQ(node.node_name(), node_name);
  // A quorum queue elects its leader again after boot; until then the depth can lag.
  EXPECT_TRUE(wait_until([&] { return node.queue_depth("kill9.quorum") == 5u; }, 30s, 100ms))
      << "depth " << node.queue_depth("kill9.quorum").value_or(0);
  EXPECT_EQ(node.get("kill9.quorum"), "a");
}

TEST(RabbitmqNode, GracefulStopAndStartKeepDurableClassicQueue) {
  rabbitmq_node node("restart");
  node.start();
  node.declare_queue("restart.classic", /*quorum=*/false);
  node.publish("restart.classic", {"kept"}, /*persistent=*/true);
  node.stop();
  EXPECT_FALSE(port_open(node.port()));
  node.start();
  EXPECT_EQ(node.queue_depth("restart.classic"), 1u);
  EXPECT_EQ(node.get("restart.classic"), "kept");
}

TEST(RabbitmqNode, SigtermStopsTheNodeGracefullyAndAQuorumQueueKeepsItsMessages) {
  rabbitmq_node node("sigterm");
  node.start();
  node.declare_queue("sigterm.quorum", /*quorum=*/true);
  node.publish("sigterm.quorum", {"a", "b"}, /*persistent=*/true);
  ASSERT_TRUE(wait_until([&] { return node.queue_depth("sigterm.quorum") == 2u; }, 10s));
  const int status = node.terminate();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the VM halted by itself, status " << status;
  EXPECT_FALSE(port_open(node.port()));
  std::ifstream log(node.dir() / "log" / (node.node_name() + ".log"));
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("SIGTERM received - shutting down"), std::string::npos)
      << "RabbitMQ took it as a shutdown: " << text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
  node.start();
  EXPECT_TRUE(wait_until([&] { return node.queue_depth("sigterm.quorum") == 2u; }, 30s, 100ms))
      << "depth " << node.queue_depth("sigterm.quorum").value_or(0);
  EXPECT_EQ(node.get("sigterm.quorum"), "a");
}

TEST(RabbitmqNode, SharedBrokerIsStartedOnceAndServes) {
  auto& broker = shared_broker();
  EXPECT_EQ(&broker, &shared_broker());
  ASSERT_TRUE(broker.running());
  broker.declare_queue("shared.q", false);
  broker.publish("shared.q", {"x"});
  EXPECT_EQ(broker.queue_depth("shared.q"), 1u);
  broker.delete_queue("shared.q");
}

}  // namespace
}  // namespace dde::test
