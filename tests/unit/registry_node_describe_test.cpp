// How often the registry describes its nodes, and what of them: a ping at every heartbeat; a
// describe of the pools a request changed once it ended; of the whole node when the version its
// ping answers changed or, for a node that says no version, when the last whole one is old.
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
  std::vector<json> scopes;              ///< each describe's "only" (null: the whole node)
  json describe_answer = json::object();
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
        scopes.push_back(r.contains("only") ? r["only"] : json());
        a.ok(r["id"], describe_answer);
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
  EXPECT_TRUE(t.scopes.back().is_null()) << "a deploy body naming no pool: the whole node";
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

TEST(RegistryNodeDescribe, ARequestThatEndedHasThePoolsItNamesDescribedNotTheWholeNode) {
  one_node t;
  t.version = 3;
  EXPECT_EQ(t.beat(), 1);
  EXPECT_EQ(t.beat(), 1);
  EXPECT_EQ(t.beat(), 0);
  auto send = [&](protocol::node_request r) {
    ASSERT_TRUE(t.table.request(t.a.id, std::move(r), [](node_answer) {}));
    t.a.ok(t.a.last()["id"], json::object());
  };
  send(protocol::node::deploy{{{"isolateSystemName", "s"}, {"isolateName", "c"}}});
  send(protocol::node::kill{"s", "d", {}});
  send(protocol::node::set_rate{"t", "e", nullptr, nullptr});
  EXPECT_EQ(t.beat(), 1) << "one describe for what the three changed";
  EXPECT_EQ(t.scopes.back(), (json{{"s", {"c", "d"}}, {"t", {"e"}}}));
  send(protocol::node::shutdown{"s", std::nullopt});
  send(protocol::node::restart{"s", "c"});
  EXPECT_EQ(t.beat(), 1);
  EXPECT_EQ(t.scopes.back(), (json{{"s", json::array()}})) << "every pool of a system shut down";
  EXPECT_EQ(t.beat(), 0);

  // A scoped describe that fails is asked again, for the same pools.
  send(protocol::node::restart{"s", "c"});
  t.clock.now += 1s;
  t.watch.tick();
  auto requests = t.a.link->requests();
  for (; t.answered < requests.size(); ++t.answered) {
    auto& r = requests[t.answered];
    if (r.value("action", "") == "describe") t.a.fail(r["id"], 500, "busy");
    if (r.value("action", "") == "ping") t.a.ok(r["id"], json{{"version", 3}});
  }
  EXPECT_EQ(t.beat(), 1);
  EXPECT_EQ(t.scopes.back(), (json{{"s", {"c"}}}));

  // An answer after its request timed out (here: to no request pending) may have changed anything.
  t.a.ok(999999, json::object());
  EXPECT_EQ(t.beat(), 1);
  EXPECT_TRUE(t.scopes.back().is_null()) << t.scopes.back();
}

TEST(RegistryNodeDescribe, AScopedAnswerReplacesAddsOrRemovesOnlyThePoolsItCovers) {
  auto pool = [](const std::string& id, int workers) {
    return ordered_json{{"id", id}, {"workers", workers}};
  };
  ordered_json pools = {
      {"s", {pool("s/a", 1), pool("s/c", 1)}}, {"t", {pool("t/x", 1)}}, {"u", {pool("u/y", 1)}}};
  node_watch::merge_described(pools, {{"s", {"b", "c"}}, {"t", {"x"}}, {"u", {}}, {"v", {}}},
                              ordered_json{{"s", {pool("s/c", 2), pool("s/b", 1), pool("s/a", 9)}}});
  // s/c replaced, s/b added in id order, s/a not named so kept as it was; t/x and all of u gone.
  EXPECT_EQ(pools, (ordered_json{{"s", {pool("s/a", 1), pool("s/b", 1), pool("s/c", 2)}}}));
  node_watch::merge_described(pools, {{"s", {}}}, ordered_json{{"s", ordered_json::array()}});
  EXPECT_EQ(pools, (ordered_json{{"s", ordered_json::array()}})) << "a system that runs no pool stays";
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
