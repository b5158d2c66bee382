// The node table: unique ids, previous ids given back when free, responses matched to requests,
// and every pending request ends once: answered, timed out (504) or failed by a disconnect (502).
#include <gtest/gtest.h>

#include <set>

#include "registry_fakes.hpp"

namespace dde::registry::test {
namespace {

node_table::options fake_time(manual_clock& clock,
                              std::chrono::milliseconds timeout = std::chrono::milliseconds(1000)) {
  node_table::options o;
  o.request_timeout = timeout;
  o.now = clock.fn();
  o.seed = 42;
  return o;
}

/// Collects the answers of requests.
struct answers {
  node_table::answer_fn slot(const std::string& name) {
    return [this, name](node_answer a) { got.emplace_back(name, std::move(a)); };
  }
  std::vector<std::pair<std::string, node_answer>> got;
};

TEST(RegistryNodeTable, IdsAreNineDigitNumbersUniqueAmongConnectedNodes) {
  node_table table{node_table::options{}};
  std::set<std::string> ids;
  std::vector<std::unique_ptr<scripted_node>> nodes;
  for (std::uint64_t conn = 1; conn <= 300; ++conn) {
    nodes.push_back(std::make_unique<scripted_node>(table, conn));
    auto& id = nodes.back()->id;
    EXPECT_EQ(id.size(), 9u) << id;
    EXPECT_TRUE(protocol::valid_bootstrapper_id(id)) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 300u);
  EXPECT_EQ(table.size(), 300u);
}

TEST(RegistryNodeTable, APreviousIdIsGivenBackWhenNoConnectedNodeHoldsIt) {
  node_table table{node_table::options{}};
  scripted_node first(table, 1, "266393094");
  EXPECT_EQ(first.id, "266393094");
  // Taken: the second node gets a fresh id.
  scripted_node second(table, 2, "266393094");
  EXPECT_NE(second.id, "266393094");
  // Once the first leaves, a re-registration under that id gets it back.
  table.remove(1);
  scripted_node again(table, 3, "266393094");
  EXPECT_EQ(again.id, "266393094");
  // An id that is not a number is never given out.
  scripted_node odd(table, 4, "not-a-number");
  EXPECT_TRUE(protocol::valid_bootstrapper_id(odd.id));
}

TEST(RegistryNodeTable, TheListIsInRegistrationOrderAndANodeThatLeavesIsGone) {
  node_table table{node_table::options{}};
  scripted_node a(table, 10), b(table, 5), c(table, 7);
  auto ids = [&] {
    std::vector<std::string> out;
    for (auto& n : table.list()) out.push_back(n.id);
    return out;
  };
  EXPECT_EQ(ids(), (std::vector<std::string>{a.id, b.id, c.id}));
  EXPECT_EQ(table.remove(5), b.id);
  EXPECT_EQ(ids(), (std::vector<std::string>{a.id, c.id}));
  EXPECT_EQ(table.find(b.id), nullptr);
  EXPECT_FALSE(table.remove(5));
  EXPECT_EQ(to_json(table.list()[0]).at("port"), "50010");
}

TEST(RegistryNodeTable, ANodeIsFoundByItsNameWhenNoOtherNodeHasThatName) {
  node_table table{node_table::options{}};
  scripted_node a(table, 10), b(table, 5);
  EXPECT_EQ(table.resolve("node-10"), a.id);
  EXPECT_EQ(table.resolve(b.id), b.id);
  ASSERT_NE(table.find("node-5"), nullptr);
  EXPECT_EQ(table.find("node-5")->id, b.id);
  answers out;
  EXPECT_TRUE(table.request("node-10", protocol::node::describe{}, out.slot("d")));
  EXPECT_EQ(a.last()["action"], "describe") << "sent to the node of that name";
  EXPECT_EQ(table.resolve("node-7"), "");
  scripted_node twin(table, 7, {}, "node-10");
  EXPECT_EQ(table.resolve("node-10"), "") << "two nodes of that name: it names neither";
  EXPECT_EQ(table.resolve(a.id), a.id) << "ids still work";
}

TEST(RegistryNodeTable, ResponsesAreMatchedToTheirRequestsById) {
  manual_clock clock;
  node_table table{fake_time(clock)};
  scripted_node node(table, 1);
  answers out;
  ASSERT_TRUE(table.request(node.id, protocol::node::describe{}, out.slot("describe")));
  ASSERT_TRUE(table.request(node.id, protocol::node::shutdown{"s", {}}, out.slot("shutdown")));
  auto requests = node.link->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0]["action"], "describe");
  EXPECT_EQ(requests[1]["action"], "shutdown");
  EXPECT_EQ(requests[1]["isolateSystemName"], "s");
  EXPECT_NE(requests[0]["id"], requests[1]["id"]);
  EXPECT_TRUE(out.got.empty()) << "no answer may come before the node answers";

  node.fail(requests[1]["id"].get<std::uint64_t>(), 404, "no isolate system \"s\" on this node");
  node.ok(requests[0]["id"].get<std::uint64_t>(), {{"sampleSystem", json::array()}});
  ASSERT_EQ(out.got.size(), 2u);
  EXPECT_EQ(out.got[0].first, "shutdown");
  EXPECT_EQ(http_status(out.got[0].second), 404);
  EXPECT_EQ(out.got[0].second.error(), "no isolate system \"s\" on this node");
  EXPECT_EQ(out.got[1].first, "describe");
  EXPECT_TRUE(bool(out.got[1].second));
  EXPECT_EQ(out.got[1].second.value(), json({{"sampleSystem", json::array()}}));
  EXPECT_EQ(table.pending(), 0u);
}

TEST(RegistryNodeTable, AResponseIsOnlyAcceptedFromTheNodeThatWasAsked) {
  node_table table{node_table::options{}};
  scripted_node asked(table, 1), other(table, 2);
  answers out;
  table.request(asked.id, protocol::node::describe{}, out.slot("d"));
  response_frame r;
  r.id = asked.last()["id"].get<std::uint64_t>();
  r.ok = true;
  EXPECT_TRUE(table.on_response(other.conn, r).has_value());
  EXPECT_TRUE(out.got.empty());
  EXPECT_FALSE(table.on_response(asked.conn, r).has_value());
  EXPECT_EQ(out.got.size(), 1u);
}

TEST(RegistryNodeTable, ARequestToAnUnknownNodeIsRefusedAtOnce) {
  node_table table{node_table::options{}};
  answers out;
  EXPECT_FALSE(table.request("12133208", protocol::node::describe{}, out.slot("d")));
  EXPECT_TRUE(out.got.empty());
  EXPECT_EQ(table.pending(), 0u);
}

TEST(RegistryNodeTable, ARequestNotAnsweredWithinTheTimeoutFailsWith504AndALateAnswerIsIgnored) {
  manual_clock clock;
  node_table table{fake_time(clock, std::chrono::milliseconds(1000))};
  scripted_node node(table, 1);
  answers out;
  table.request(node.id, protocol::node::describe{}, out.slot("first"));
  clock.now += std::chrono::milliseconds(400);
  table.request(node.id, protocol::node::deploy{json::object()}, out.slot("second"));
  auto first_id = node.link->requests()[0]["id"].get<std::uint64_t>();
  EXPECT_EQ(table.next_deadline(), clock.now + std::chrono::milliseconds(600));

  clock.now += std::chrono::milliseconds(599);
  EXPECT_EQ(table.expire(), 0u);
  clock.now += std::chrono::milliseconds(1);
  EXPECT_EQ(table.expire(), 1u);
  ASSERT_EQ(out.got.size(), 1u);
  EXPECT_EQ(out.got[0].first, "first");
  EXPECT_EQ(http_status(out.got[0].second), 504);
  EXPECT_EQ(out.got[0].second.error(), "node " + node.id + " did not answer \"describe\" within 1000 ms");
  EXPECT_EQ(table.next_deadline(), clock.now + std::chrono::milliseconds(400));

  // The late answer changes nothing.
  response_frame late;
  late.id = first_id;
  late.ok = true;
  EXPECT_TRUE(table.on_response(node.conn, late).has_value());
  EXPECT_EQ(out.got.size(), 1u);

  clock.now += std::chrono::milliseconds(400);
  EXPECT_EQ(table.expire(), 1u);
  EXPECT_EQ(http_status(out.got[1].second), 504);
  EXPECT_FALSE(table.next_deadline());
}

TEST(RegistryNodeTable, ADisconnectFailsThatNodesPendingRequestsWith502AndLeavesTheOthersPending) {
  node_table table{node_table::options{}};
  scripted_node leaving(table, 1), staying(table, 2);
  answers out;
  table.request(leaving.id, protocol::node::deploy{json::object()}, out.slot("a"));
  table.request(leaving.id, protocol::node::describe{}, out.slot("b"));
  table.request(staying.id, protocol::node::describe{}, out.slot("c"));
  std::size_t failed = 0;
  EXPECT_EQ(table.remove(leaving.conn, &failed), leaving.id);
  EXPECT_EQ(failed, 2u);
  ASSERT_EQ(out.got.size(), 2u);
  for (auto& [name, answer] : out.got) {
    EXPECT_EQ(http_status(answer), 502);
    EXPECT_EQ(answer.error(), "node " + leaving.id + " disconnected");
  }
  EXPECT_EQ(table.pending(), 1u);
}

TEST(RegistryNodeTable, AFailureCallbackMaySendANewRequest) {
  node_table table{node_table::options{}};
  scripted_node leaving(table, 1), other(table, 2);
  answers out;
  table.request(leaving.id, protocol::node::describe{}, [&](node_answer) {
    EXPECT_TRUE(table.request(other.id, protocol::node::describe{}, out.slot("follow-up")));
  });
  table.remove(leaving.conn);
  EXPECT_EQ(other.link->requests().size(), 1u);
  EXPECT_EQ(table.pending(), 1u);
}

}  // namespace
}  // namespace dde::registry::test
