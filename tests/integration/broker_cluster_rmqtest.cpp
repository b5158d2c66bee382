// Faults of a three-node RabbitMQ cluster under a steady at-least-once load of 60,000 numbered
// messages (producer -> dde-mqs -> cluster -> echo pool). One MQS per test, given every node's
// address and never restarted: every message is consumed, the only duplicates are deliveries the
// broker flagged as redelivered, and the rows join the fault table the suite prints.
#include <array>
#include <memory>
#include <thread>

#include "fault_harness.hpp"

namespace dde::test {
namespace {

const auto* const table_printer = ::testing::AddGlobalTestEnvironment(new fault_table_printer);

class BrokerCluster : public Fault {
 protected:
  static constexpr int cluster_messages = 60000;

  static std::array<std::unique_ptr<rabbitmq_node>, 3>& nodes() {
    static std::array<std::unique_ptr<rabbitmq_node>, 3> cluster;
    return cluster;
  }

  static void SetUpTestSuite() {
    auto& cluster = nodes();
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      cluster[i] = std::make_unique<rabbitmq_node>("bc" + std::to_string(i + 1));
      cluster[i]->use_cookie("DDEBROKERCLUSTERSUITE");
      cluster[i]->start();
    }
    for (std::size_t i = 1; i < cluster.size(); ++i)
      ASSERT_TRUE(cluster[i]->join_cluster(*cluster[0])) << "see " << cluster[i]->dir();
  }
  static void TearDownTestSuite() {
    for (auto& node : nodes()) node.reset();
  }

  /// A fresh MQS on every node (node 1 first), a registry, a node and the load, steady.
  void SetUp() override {
    for (auto& node : nodes())  // a node a test left down rejoins with its data
      if (!node->running()) node->start();
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::string url = "amqp://guest@";
    for (auto& node : nodes())
      url += (url.back() == '@' ? "" : ",") + node->host() + ":" + std::to_string(node->port());
    mqs = start_mqs(*nodes()[0], dir, 16, 0, {}, {}, {"--broker", url + "/"});
    registry = start_registry(dir);
    node_ = start_activator(registry, dir, node_name);
    id = node_id(registry, node_name);
  }

  void TearDown() override {
    if (node_.proc) node_.proc->stop(15s);  // its isolate systems go while the MQS is still there
    if (mqs.proc) mqs.proc->stop();
  }

  /// The load at `per_second`, steady, its queues safe from a kill -9 (RabbitMQ 3.10 loses a quorum
  /// queue killed before Ra wrote its name to disk, about a second after the declare).
  void start_cluster_load(int per_second) {
    start_load(mqs.url(), nlohmann::json::object(), cluster_messages, per_second, true);
    await_steady();
    for (auto& node : nodes()) ASSERT_TRUE(node->wait_quorum_queues_registered());
  }

  /// The MQS's broker connections per node, as its /health tells them.
  std::string connections() {
    auto h = rest("GET", "http://127.0.0.1:" + std::to_string(mqs.port) + "/health");
    return h.json.value("connections", std::string("?"));
  }

  /// The cluster node whose Erlang name is `name`.
  rabbitmq_node& node_named(const std::string& name) {
    for (auto& node : nodes())
      if (node->node_name() == name) return *node;
    throw std::runtime_error("no node of the cluster is " + name);
  }

  /// Accounts as the fault suite does, then: no duplicate the broker did not flag, the MQS never
  /// restarted, and consumption resumed within `gap_limit` of the fault.
  void account_cluster(const std::string& fault, std::int64_t injected, std::int64_t repaired,
                       std::string note, std::chrono::milliseconds gap_limit) {
    account(fault, injected, repaired, std::move(note));
    EXPECT_EQ(unexplained_duplicates(read_echo_logs(dir)), 0u) << "duplicates the broker did not flag";
    EXPECT_TRUE(mqs.proc->running()) << mqs.proc->log();
    EXPECT_LT(fault_table().back().longest_gap_ms, double(gap_limit.count())) << mqs.proc->log();
  }

  std::string echo_queue() const { return consumers + ".echo"; }
};

TEST_F(BrokerCluster, NothingIsLostWhenTheNodeTheMqsIsOnIsKilled) {
  start_cluster_load(3000);
  auto before = connections();
  auto injected = wall_us();
  nodes()[0]->kill9();
  account_cluster("kill -9 of the broker node the MQS publishes on", injected, injected,
                  "connections " + before, 10s);
  EXPECT_NE(mqs.proc->log().find("reconnected to broker at 127.0.0.1:"), std::string::npos)
      << mqs.proc->log();
  const auto dead = nodes()[0]->host() + ":" + std::to_string(nodes()[0]->port()) + "=0";
  EXPECT_TRUE(wait_until([&] { return connections().find(dead) != std::string::npos; }, 30s))
      << "connections still counted on the dead node: " << connections();
}

TEST_F(BrokerCluster, NothingIsLostWhenTheNodeLeadingThePoolsQueueIsKilled) {
  start_cluster_load(3000);
  auto leaders = nodes()[1]->quorum_leaders();
  ASSERT_TRUE(leaders.count(echo_queue())) << "no quorum queue " << echo_queue();
  auto& leader = node_named(leaders.at(echo_queue()));
  std::set<std::string> leading;
  for (auto& [queue, node] : leaders) leading.insert(node);
  EXPECT_GE(leading.size(), 2u) << "the leaders spread over the cluster (x-queue-leader-locator: balanced)";
  auto note = std::to_string(leading.size()) + " of 3 nodes lead the " + std::to_string(leaders.size()) +
              " queues; connections " + connections() + "; leader on port " + std::to_string(leader.port());
  auto injected = wall_us();
  leader.kill9();
  account_cluster("kill -9 of the node leading the pool's queue", injected, injected, note, 10s);
}

TEST_F(BrokerCluster, NothingIsLostThroughARollingRestartOfEveryNode) {
  start_cluster_load(500);  // 120 s of load: the restarts of the three nodes (80-90 s here) happen inside it
  auto injected = wall_us();
  for (auto& node : nodes()) {
    // As an operator's rolling restart does: a node is stopped only once every quorum queue keeps
    // its majority without it, that is once the node restarted before has caught up.
    ASSERT_TRUE(node->wait_not_quorum_critical()) << node->node_name();
    ASSERT_EQ(node->terminate(), 0) << node->node_name();
    node->start();
  }
  auto done = wall_us();
  account_cluster("rolling restart of the 3 nodes (SIGTERM, start, next)", injected, injected,
                  "the restarts took " + std::to_string((done - injected) / 1000000) + " s", 10s);
}

TEST_F(BrokerCluster, NothingIsLostWhenTheNodeTheMqsIsOnIsFrozenFor30Seconds) {
  start_cluster_load(3000);
  auto before = connections();
  auto injected = wall_us();
  nodes()[0]->freeze();
  std::this_thread::sleep_for(30s);  // the fault itself: 30 s frozen
  nodes()[0]->thaw();
  auto repaired = wall_us();
  account_cluster("node the MQS publishes on frozen 30 s (SIGSTOP, SIGCONT)", injected, repaired,
                  "connections " + before, 40s);
}

}  // namespace
}  // namespace dde::test
