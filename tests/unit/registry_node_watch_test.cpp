// Node failure detection and failover: a node silent for the timeout is lost, its connection
// closed, and its pools with failover: true go to the surviving nodes, their workers spread; a node
// that reconnects under its id within the timeout is not lost.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "node_watch.hpp"
#include "registry_fakes.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;

json pool_entry(const std::string& id, bool failover, int workers) {
  return {{"id", id},
          {"workerUri", "/w/libconsumer.so"},
          {"workersCount", workers},
          {"workersPaths", std::vector<std::string>(std::size_t(workers), "localhost")},
          {"routerType", "roundRobin"},
          {"messageQueuingSystemServer", "ws://127.0.0.1:42043/mqs"},
          {"failover", failover}};
}

/// Answers every request of `node` not answered yet: pings ok, describes with `pools`.
void answer_all(scripted_node& node, std::size_t& answered, const json& pools) {
  auto requests = node.link->requests();
  for (; answered < requests.size(); ++answered) {
    auto& r = requests[answered];
    auto action = r.value("action", "");
    if (action == "ping") node.ok(r["id"], json::object());
    if (action == "describe") node.ok(r["id"], pools);
  }
}

std::vector<json> deploys(const scripted_node& node) {
  std::vector<json> out;
  for (auto& r : node.link->requests())
    if (r.value("action", "") == "deploy") out.push_back(r);
  return out;
}

struct three_nodes {
  manual_clock clock;
  node_table table{table_options(clock)};
  node_watch watch{table, node_watch::options{1000ms, 3000ms, clock.fn()}};
  scripted_node a{table, 1}, b{table, 2}, c{table, 3};
  std::size_t seen_a = 0, seen_b = 0, seen_c = 0;
  json a_pools = {{"sys", json::array({pool_entry("sys/work", true, 3), pool_entry("sys/other", false, 1)})}};
  void beat(bool a_answers) {
    watch.tick();
    if (a_answers) answer_all(a, seen_a, a_pools);
    answer_all(b, seen_b, json::object());
    answer_all(c, seen_c, json::object());
  }
  /// Node a is described, then its connection ends and a heartbeat 2 s later misses it.
  void drop_a_for_2s() {
    beat(true);
    table.remove(a.conn);
    clock.now += 2s;
    beat(false);
  }
};

TEST(RegistryNodeWatch, ASilentNodeIsLostAndItsFailoverPoolsAreSpreadOverTheSurvivors) {
  three_nodes t;
  t.beat(true);
  t.clock.now += 1s;
  t.beat(true);
  for (int k = 0; k < 3; ++k) {
    t.clock.now += 1s;
    t.beat(false);
    EXPECT_FALSE(t.a.link->closed) << "still within the timeout";
  }
  t.clock.now += 1s;
  t.beat(false);
  EXPECT_TRUE(t.a.link->closed);
  EXPECT_EQ(t.table.find(t.a.id), nullptr);
  auto on_b = deploys(t.b), on_c = deploys(t.c);
  ASSERT_EQ(on_b.size(), 1u);
  ASSERT_EQ(on_c.size(), 1u);
  EXPECT_EQ(on_b[0]["body"]["workersPaths"].size() + on_c[0]["body"]["workersPaths"].size(), 3u);
  EXPECT_EQ(on_b[0]["body"]["isolateName"], "work") << "only the pool with failover: true moves";
  EXPECT_EQ(on_b[0]["body"]["bootstrapperId"], t.b.id);
  t.b.ok(on_b[0]["id"], {{"instance", "x"}});
  t.c.fail(on_c[0]["id"], 409, "busy");
  auto status = t.watch.status();
  ASSERT_EQ(status["failovers"].size(), 1u);
  auto& to = status["failovers"][0]["pools"][0]["to"];
  EXPECT_EQ(to[0]["status"], "deployed");
  EXPECT_EQ(to[1]["status"], "failed");
  EXPECT_EQ(to[1]["error"], "busy");
}

TEST(RegistryNodeWatch, ANodeThatRegistersAgainUnderItsIdWithinTheTimeoutIsNotLost) {
  three_nodes t;
  t.drop_a_for_2s();
  scripted_node again{t.table, 4, t.a.id};
  ASSERT_EQ(again.id, t.a.id);
  t.clock.now += 2s;
  t.beat(false);
  std::size_t seen = 0;
  answer_all(again, seen, t.a_pools);
  t.clock.now += 2s;
  t.beat(false);
  answer_all(again, seen, t.a_pools);
  EXPECT_TRUE(deploys(t.b).empty());
  EXPECT_TRUE(deploys(t.c).empty());
  EXPECT_TRUE(t.watch.status()["failovers"].empty());
}

TEST(RegistryNodeWatch, ADisconnectedNodeNotBackWithinTheTimeoutIsLost) {
  three_nodes t;
  t.drop_a_for_2s();
  EXPECT_TRUE(deploys(t.b).empty() && deploys(t.c).empty());
  t.clock.now += 3s;  // the timeout runs from the first heartbeat that missed it
  t.beat(false);
  EXPECT_EQ(deploys(t.b).size() + deploys(t.c).size(), 2u);
}

TEST(RegistryNodeWatch, APoolThatFindsNoNodeLeftWaitsAndGoesToTheNextNodeThatRegisters) {
  // Round 4 of the stress proof: a node declared lost under load came back 2.5 s later, but the pool
  // failed over meanwhile had found no node and was never deployed again.
  three_nodes t;
  t.beat(true);
  t.table.remove(t.a.conn);
  t.table.remove(t.b.conn);
  t.table.remove(t.c.conn);
  t.clock.now += 1s;
  t.beat(false);
  t.clock.now += 3s;
  t.beat(false);
  auto status = t.watch.status();
  ASSERT_EQ(status["failovers"].size(), 3u) << status.dump();
  std::size_t waiting = 0;
  for (auto& f : status["failovers"])
    for (auto& p : f["pools"]) {
      EXPECT_EQ(p["error"], "no node left to run it: it goes to the next node that registers");
      ++waiting;
    }
  ASSERT_EQ(waiting, 1u) << "only a's pool with failover: true";
  t.clock.now += 1s;
  t.beat(false);  // still no node: nothing is sent, it goes on waiting

  scripted_node d{t.table, 4};
  t.clock.now += 1s;
  t.watch.tick();
  auto on_d = deploys(d);
  ASSERT_EQ(on_d.size(), 1u);
  EXPECT_EQ(on_d[0]["body"]["isolateName"], "work");
  EXPECT_EQ(on_d[0]["body"]["bootstrapperId"], d.id);
  EXPECT_EQ(on_d[0]["body"]["workersPaths"].size(), 3u);
  d.ok(on_d[0]["id"], {{"instance", "x"}});
  status = t.watch.status();
  json placed;
  for (auto& f : status["failovers"])
    if (!f["pools"].empty()) placed = f["pools"][0];
  EXPECT_FALSE(placed.contains("error")) << placed.dump();
  EXPECT_EQ(placed["waitedForANode"], true);
  ASSERT_EQ(placed["to"].size(), 1u) << placed.dump();
  EXPECT_EQ(placed["to"][0]["node"], d.id);
  EXPECT_EQ(placed["to"][0]["status"], "deployed");
  t.clock.now += 1s;
  t.watch.tick();
  EXPECT_EQ(deploys(d).size(), 1u) << "placed once";
}

}  // namespace
}  // namespace dde::registry::test

namespace dde::registry::test {
namespace {

/// A state_store in memory, counting its writes.
struct memory_store : state_store {
  std::map<std::string, remembered_node> rows;
  int saves = 0;
  std::vector<remembered_node> load() override {
    std::vector<remembered_node> out;
    for (auto& [id, n] : rows) out.push_back(n);
    return out;
  }
  void save(const remembered_node& n) override {
    ++saves;
    rows[n.info.id] = n;
  }
  void forget(const std::string& id) override {
    forgotten.push_back(id);
    rows.erase(id);
  }
  std::vector<std::string> forgotten;
  std::string name() const override { return "memory store"; }
};

/// A node table and a watch on a hand-moved clock, remembering in `store`.
struct remembering_watch {
  explicit remembering_watch(memory_store& store, std::chrono::milliseconds grace = 15s) : store(store) {
    node_watch::options o{1000ms, 3000ms, clock.fn()};
    o.describe_every = 0ms;  // described at every heartbeat: what is remembered is the question here
    o.store = &store;
    o.restore_grace = grace;
    watch = std::make_unique<node_watch>(table, o);
  }
  memory_store& store;
  manual_clock clock;
  node_table table{[this] {
    node_table::options o;
    o.now = clock.fn();
    return o;
  }()};
  std::unique_ptr<node_watch> watch;
};

TEST(RegistryNodeWatchStore, ANodesPoolsAreRememberedOnlyWhenTheyChange) {
  memory_store store;
  remembering_watch t(store);
  auto& clock = t.clock;
  auto& watch = *t.watch;
  scripted_node a{t.table, 1, "266393094", "node-a"};
  std::size_t seen = 0;
  json pools = {{"sys", json::array({pool_entry("sys/work", true, 2)})}};
  pools["sys"][0]["stats"] = {{"delivered", 1}};
  for (int beat = 0; beat < 3; ++beat) {
    pools["sys"][0]["stats"]["delivered"] = beat * 100;  // counters change every beat
    watch.tick();
    answer_all(a, seen, pools);
    clock.now += 1s;
  }
  EXPECT_EQ(store.saves, 1) << "counters are not what the store keeps";
  auto& row = store.rows.at("266393094");
  EXPECT_EQ(row.info.name, "node-a");
  EXPECT_FALSE(row.pools["sys"][0].contains("stats"));
  EXPECT_EQ(row.pools["sys"][0]["failover"], true);
  EXPECT_EQ(row.pools["sys"][0]["workersCount"], 2);

  pools["sys"][0]["rate"] = {{"messages", 5}, {"perMs", 1000}};
  watch.tick();
  answer_all(a, seen, pools);
  EXPECT_EQ(store.saves, 2) << "a new rate is remembered";
}

TEST(RegistryNodeWatchStore, ARememberedNodeThatDoesNotComeBackAfterARestartIsFailedOver) {
  memory_store store;
  remembered_node lost;
  lost.info.id = "266393094";
  lost.info.name = "node-a";
  lost.pools = remembered_pools(json{{"sys", json::array({pool_entry("sys/work", true, 2)})}});
  store.rows[lost.info.id] = lost;
  remembered_node back = lost;
  back.info.id = "12133208";
  back.info.name = "node-b";
  back.pools = json::object();
  store.rows[back.info.id] = back;

  remembering_watch t(store, 10s);
  auto& clock = t.clock;
  auto& watch = *t.watch;
  EXPECT_EQ(watch.restore(), 2u);
  // Node b registers again under its id within the grace; node a never does.
  scripted_node b{t.table, 2, "12133208", "node-b"};
  std::size_t seen = 0;
  for (int s = 0; s < 9; ++s) {
    watch.tick();
    answer_all(b, seen, json::object());
    clock.now += 1s;
  }
  EXPECT_TRUE(deploys(b).empty()) << "not before the grace ends (well past the heartbeat timeout)";
  clock.now += 1s;
  watch.tick();
  auto moved = deploys(b);
  ASSERT_EQ(moved.size(), 1u) << "node a's failover pool runs on node b";
  EXPECT_EQ(moved[0]["body"]["isolateName"], "work");
  EXPECT_EQ(moved[0]["body"]["workersPaths"].size(), 2u);
  EXPECT_EQ(moved[0]["body"]["uri"], "/w/libconsumer.so");
  EXPECT_FALSE(store.rows.count("266393094")) << "a lost node is forgotten";
  EXPECT_TRUE(store.rows.count("12133208"));
  auto status = watch.status();
  ASSERT_EQ(status["failovers"].size(), 1u);
  EXPECT_NE(status["failovers"][0]["reason"].get<std::string>().find(
                "remembered from before this registry started or took over"),
            std::string::npos);
}

TEST(RegistryNodeWatchStore, APoolWaitingForANodeIsRememberedAndPlacedByTheNextRegistry) {
  // A pool that finds no node left waits in the store, not in the registry's memory only: with the
  // lost node's row forgotten, a registry restart or takeover meanwhile would drop the pool for good.
  memory_store store;
  {
    remembering_watch first(store);
    scripted_node a{first.table, 1, "266393094", "node-a"};
    std::size_t seen = 0;
    first.watch->tick();
    answer_all(
        a, seen,
        json{{"sys", json::array({pool_entry("sys/work", true, 2), pool_entry("sys/other", false, 1)})}});
    ASSERT_TRUE(store.rows.count("266393094"));
    first.table.remove(a.conn);
    first.watch->tick();  // a's connection ended: lost unless back within the timeout
    first.clock.now += 4s;
    first.watch->tick();  // a is lost and no node is left: its failover pool waits
    EXPECT_FALSE(store.rows.count("266393094")) << "a lost node is forgotten";
    ASSERT_TRUE(store.rows.count("waiting:266393094")) << "its waiting pool is not";
    auto& row = store.rows.at("waiting:266393094");
    EXPECT_EQ(row.info.name, "node-a");
    ASSERT_EQ(row.pools["sys"].size(), 1u) << "only the pool with failover: true waits";
    EXPECT_EQ(row.pools["sys"][0]["id"], "sys/work");
  }  // the registry dies before any node registers

  remembering_watch next(store);
  EXPECT_EQ(next.watch->restore(), 0u) << "a waiting row is not a node to watch";
  auto status = next.watch->status();
  EXPECT_TRUE(status["nodes"].empty()) << status.dump();
  ASSERT_EQ(status["failovers"].size(), 1u) << status.dump();
  EXPECT_EQ(status["failovers"][0]["node"], "266393094");
  EXPECT_EQ(status["failovers"][0]["pools"][0]["error"],
            "no node left to run it: it goes to the next node that registers");
  next.watch->tick();  // no node yet: it goes on waiting, still remembered
  EXPECT_TRUE(store.rows.count("waiting:266393094"));

  scripted_node b{next.table, 2, "12133208", "node-b"};
  next.clock.now += 1s;
  next.watch->tick();
  auto on_b = deploys(b);
  ASSERT_EQ(on_b.size(), 1u);
  EXPECT_EQ(on_b[0]["body"]["isolateName"], "work");
  EXPECT_EQ(on_b[0]["body"]["uri"], "/w/libconsumer.so");
  EXPECT_EQ(on_b[0]["body"]["workersPaths"].size(), 2u);
  EXPECT_FALSE(store.rows.count("waiting:266393094")) << "placed: nothing waits any more";
  EXPECT_EQ(next.watch->status()["failovers"][0]["pools"][0]["waitedForANode"], true);
  next.clock.now += 1s;
  next.watch->tick();
  EXPECT_EQ(deploys(b).size(), 1u) << "placed once";
}

TEST(RegistryNodeWatchStore, AWaitingRowIsWrittenOnlyWhenAPoolWaitsAndGoesWhenARestoredOneIsPlacedAtOnce) {
  memory_store store;
  {
    remembering_watch t(store);
    scripted_node a{t.table, 1, "266393094", "node-a"};
    scripted_node b{t.table, 2, "12133208", "node-b"};
    std::size_t seen_a = 0, seen_b = 0;
    t.watch->tick();
    answer_all(a, seen_a, json{{"sys", json::array({pool_entry("sys/work", true, 2)})}});
    answer_all(b, seen_b, json::object());
    t.table.remove(a.conn);
    for (int s = 0; s < 5; ++s) {  // b answers every beat; a is gone past its 3 s timeout
      t.clock.now += 1s;
      t.watch->tick();
      answer_all(b, seen_b, json::object());
    }
    ASSERT_EQ(deploys(b).size(), 1u) << "a's pool goes to b at once";
    EXPECT_EQ(store.forgotten, std::vector<std::string>{"266393094"}) << "no waiting row to write or forget";
    EXPECT_EQ(store.rows.count("waiting:266393094"), 0u);
  }

  // A waiting row whose pool finds a node as soon as it is restored is forgotten then.
  store.rows.clear();
  store.forgotten.clear();
  remembered_node waiting;
  waiting.info = {"waiting:266393094", "127.0.0.1", "42042", "node-a", "ws://127.0.0.1:42042/activator", {}};
  waiting.pools = {{"sys", json::array({pool_entry("sys/work", true, 2)})}};
  store.rows[waiting.info.id] = waiting;
  remembering_watch next(store);
  scripted_node c{next.table, 3, "4040", "node-c"};
  EXPECT_EQ(next.watch->restore(), 0u);
  EXPECT_EQ(deploys(c).size(), 1u) << "the restored pool goes to the node already there";
  EXPECT_EQ(store.rows.count("waiting:266393094"), 0u) << "and its row goes";
  EXPECT_EQ(store.forgotten, std::vector<std::string>{"waiting:266393094"});
}

TEST(RegistrySqliteStore, WhatIsSavedIsLoadedAgainAfterReopeningAndForgottenRowsStayGone) {
  auto file = std::filesystem::temp_directory_path() / ("dde-store-" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(file);
  {
    auto store = open_sqlite_store(file.string());
    remembered_node n;
    n.info = {"266393094", "127.0.0.1", "42042", "node-a", "ws://127.0.0.1:42042/activator", {}};
    n.pools = {{"sys", json::array({{{"id", "sys/work"}, {"failover", true}}})}};
    store->save(n);
    n.info.id = "12133208";
    store->save(n);
    n.pools = json::object();
    store->save(n);  // replaces its row
    store->forget("266393094");
  }
  auto store = open_sqlite_store(file.string());
  auto rows = store->load();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].info.id, "12133208");
  EXPECT_EQ(rows[0].info.name, "node-a");
  EXPECT_EQ(rows[0].info.activator, "ws://127.0.0.1:42042/activator");
  EXPECT_EQ(rows[0].pools, json::object());
  std::filesystem::remove(file);
  for (auto suffix : {"-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);

  try {
    open_sqlite_store("/nonexistent-dir/x.db");
    ADD_FAILURE() << "a file that cannot be created is an error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cannot open state file /nonexistent-dir/x.db: ", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace dde::registry::test
