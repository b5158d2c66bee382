// How often the registry describes its nodes: a ping at every heartbeat, a describe only when the
// last one may be stale (a request that may have changed the node's pools ended since, or the
// version its ping answers changed) or, for a node that says no version, old.
#include <gtest/gtest.h>

#include <optional>

#include "node_watch.hpp"
#include "registry_fakes.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;

struct one_node {
  manual_clock clock;
  node_table table{table_options(clock)};
  node_watch watch{table, [this] {
                     node_watch::options o{1000ms, 3000ms, clock.fn()};
                     o.describe_every = 10s;
                     return o;
                   }()};
  scripted_node a{table, 1};
  std::size_t answered = 0;
  std::optional<std::uint64_t> version;  ///< what its pings answer (none: an older node's {})
  /// One heartbeat, 1 s after the last; answers what it asked. Returns the describes it asked for.
  int beat() {
    clock.now += 1s;
    watch.tick();
    int describes = 0;
    auto requests = a.link->requests();
    for (; answered < requests.size(); ++answered) {
      auto& r = requests[answered];
      auto action = r.value("action", "");
      if (action == "ping") a.ok(r["id"], version ? json{{"version", *version}} : json::object());
      if (action == "describe") {
        ++describes;
        a.ok(r["id"], json::object());
      }
    }
    return describes;
  }
};

TEST(RegistryNodeDescribe, ANodeIsDescribedOnceThenOnlyAfterARequestThatMayChangeItsPoolsOrEveryInterval) {
  one_node t;
  EXPECT_EQ(t.beat(), 1) << "a new node";
  int quiet = 0;
  for (int i = 0; i < 8; ++i) quiet += t.beat();
  EXPECT_EQ(quiet, 0) << "pinged, not described, while nothing changed";

  bool deployed = false;
  ASSERT_TRUE(t.table.request(t.a.id, protocol::node::deploy{}, [&](node_answer) { deployed = true; }));
  auto deploy_id = t.a.last()["id"];
  EXPECT_EQ(t.beat(), 0) << "the deploy is still under way: its outcome is not in a describe yet";
  t.a.ok(deploy_id, json::object());
  ASSERT_TRUE(deployed);
  EXPECT_EQ(t.beat(), 1) << "described after the deploy ended";
  EXPECT_EQ(t.beat(), 0);

  int later = 0;
  for (int i = 0; i < 9; ++i) later += t.beat();
  EXPECT_EQ(later, 1) << "and again 10 s after the last describe, for what the node changed itself";
}

TEST(RegistryNodeDescribe, ANodeThatSaysItsVersionIsDescribedWhenItChangesAndNeverForAge) {
  one_node t;
  t.version = 7;
  EXPECT_EQ(t.beat(), 1) << "a new node";
  EXPECT_EQ(t.beat(), 1) << "its first ping said a version the first describe did not know";
  int quiet = 0;
  for (int i = 0; i < 30; ++i) quiet += t.beat();
  EXPECT_EQ(quiet, 0) << "30 s at one version: not described again";

  t.version = 8;  // e.g. a pool scaled itself
  EXPECT_EQ(t.beat(), 0) << "the ping that says so is answered after this heartbeat's look";
  EXPECT_EQ(t.beat(), 1) << "described once the registry heard of the new version";
  EXPECT_EQ(t.beat(), 0);

  bool deployed = false;
  ASSERT_TRUE(t.table.request(t.a.id, protocol::node::deploy{}, [&](node_answer) { deployed = true; }));
  t.a.ok(t.a.last()["id"], json::object());
  ASSERT_TRUE(deployed);
  EXPECT_EQ(t.beat(), 1) << "a request the registry sent still counts, whatever the version";
}

TEST(RegistryNodeDescribe, AFailedDescribeIsAskedAgainAtTheNextHeartbeat) {
  one_node t;
  t.clock.now += 1s;
  t.watch.tick();
  auto requests = t.a.link->requests();
  for (auto& r : requests) {
    if (r.value("action", "") == "describe") t.a.fail(r["id"], 500, "busy");
    if (r.value("action", "") == "ping") t.a.ok(r["id"], json::object());
  }
  t.answered = requests.size();
  EXPECT_EQ(t.beat(), 1);
}

}  // namespace
}  // namespace dde::registry::test
