// The registry's domain without sockets: node registration frames, REST routing, answers relayed
// from nodes, and moving a pool between nodes.
#include <gtest/gtest.h>

#include "node_endpoint.hpp"
#include "registry_fakes.hpp"
#include "rest_api.hpp"

namespace dde::registry::test {
namespace {

class RegistryEndpoint : public ::testing::Test {
 protected:
  std::shared_ptr<recording_link> open(std::uint64_t conn, const std::string& remote) {
    auto link = std::make_shared<recording_link>();
    endpoint.on_open(conn, remote, link);
    return link;
  }
  json register_frame(json id = nullptr, const std::string& host = "127.0.0.1", int port = 42042) {
    return {{"type", "register"}, {"protocol", 1}, {"bootstrapperId", id},
            {"host", host},       {"port", port},  {"name", "node-a"}};
  }
  node_table table{node_table::options{}};
  node_endpoint endpoint{table};
};

TEST_F(RegistryEndpoint, ARegisteredNodeGetsAnIdAndIsListedWithTheAddressOfItsConnection) {
  auto link = open(1, "127.0.0.1:50189");
  endpoint.on_text(1, register_frame().dump());
  ASSERT_EQ(link->frames.size(), 1u);
  EXPECT_EQ(link->frames[0]["type"], "registered");
  auto id = link->frames[0]["bootstrapperId"].get<std::string>();
  EXPECT_TRUE(protocol::valid_bootstrapper_id(id));
  auto listed = to_json(table.list().at(0));
  EXPECT_EQ(listed["bootstrapperId"], id);
  EXPECT_EQ(listed["ip"], "127.0.0.1");
  EXPECT_EQ(listed["port"], "50189");
  EXPECT_EQ(listed["name"], "node-a");
  EXPECT_EQ(listed["activator"], "ws://127.0.0.1:42042/activator");
  EXPECT_FALSE(link->closed);

  endpoint.on_close(1, "closed by peer");
  EXPECT_EQ(table.size(), 0u);
}

TEST_F(RegistryEndpoint, ANodeRegisteringAgainWithItsPreviousIdKeepsIt) {
  auto link = open(1, "127.0.0.1:50189");
  endpoint.on_text(1, register_frame("266393094").dump());
  EXPECT_EQ(link->frames.at(0)["bootstrapperId"], "266393094");
  auto rival = open(2, "127.0.0.1:50190");
  endpoint.on_text(2, register_frame("266393094").dump());
  EXPECT_NE(rival->frames.at(0)["bootstrapperId"], "266393094");
}

TEST_F(RegistryEndpoint, ANodeListeningOnEveryInterfaceIsReachedAtTheAddressItConnectedFrom) {
  open(1, "10.1.2.3:50189");
  endpoint.on_text(1, register_frame(nullptr, "0.0.0.0", 42050).dump());
  EXPECT_EQ(table.list().at(0).activator, "ws://10.1.2.3:42050/activator");
}

TEST_F(RegistryEndpoint, ABadFirstFrameIsAnsweredWithAnErrorAndTheConnectionClosed) {
  struct bad_case {
    std::string text, error;
  };
  std::vector<bad_case> cases = {
      {"not json", "frame is not a JSON object"},
      {R"({"type": "response", "id": 1, "ok": true})",
       "the first frame must be {\"type\": \"register\", ...}"},
      {R"({"type": "register", "protocol": 2, "port": 1})",
       "protocol version 2 is not supported; this registry speaks version 1"},
      {R"({"type": "register", "protocol": 1})",
       "field \"port\" must be the activator's port, an integer from 1 to 65535"},
      {R"({"type": "register", "protocol": 1, "port": 42042, "bootstrapperId": "abc"})",
       "field \"bootstrapperId\" must be null or a string of 1 to 18 digits"},
  };
  std::uint64_t conn = 1;
  for (auto& c : cases) {
    auto link = open(conn, "127.0.0.1:1");
    endpoint.on_text(conn, c.text);
    ASSERT_EQ(link->frames.size(), 1u) << c.text;
    EXPECT_EQ(link->frames[0], json({{"type", "error"}, {"error", c.error}})) << c.text;
    EXPECT_TRUE(link->closed) << c.text;
    endpoint.on_close(conn++, "closed");
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST_F(RegistryEndpoint, ARegisteredNodesBadFramesGetErrorsButKeepItsConnection) {
  auto link = open(1, "127.0.0.1:1");
  endpoint.on_text(1, register_frame().dump());
  endpoint.on_text(1, R"({"type": "response", "ok": true})");
  endpoint.on_text(1, R"({"type": "bogus"})");
  endpoint.on_binary(1);
  endpoint.on_text(1, R"({"type": "event", "event": "system-restarted", "isolateSystemName": "s"})");
  ASSERT_EQ(link->frames.size(), 4u);
  EXPECT_EQ(link->frames[1]["error"], "a response needs the request's \"id\"");
  EXPECT_EQ(link->frames[2]["error"], "unknown frame type \"bogus\"; expected response or event");
  EXPECT_EQ(link->frames[3]["type"], "error");
  EXPECT_FALSE(link->closed);
  EXPECT_EQ(table.size(), 1u);
}

class RegistryRest : public ::testing::Test {
 protected:
  /// Handles a request; the reply, if it came already.
  std::optional<rest_reply> call(const std::string& method, const std::string& target,
                                 const std::string& body = "") {
    // The reply may come after this returns, when a node answers.
    auto got = std::make_shared<std::optional<rest_reply>>();
    api.handle({method, target, body, "127.0.0.1:1"}, [got, this](rest_reply r) {
      *got = r;
      last = r;
    });
    return *got;
  }
  std::uint64_t request_id(scripted_node& n) { return n.last()["id"].get<std::uint64_t>(); }

  node_table table{node_table::options{}};
  rest_api api{table};
  std::optional<rest_reply> last;
};

TEST_F(RegistryRest, AnUnknownPathIsA404NamingIt) {
  auto r = call("GET", "/registry/nodes?x=1");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body["error"].get<std::string>().rfind(
                "unknown path \"/registry/nodes\"; the registry serves GET", 0),
            0u);
  EXPECT_EQ(call("GET", "/registry/system/1/2")->status, 404);
  EXPECT_EQ(call("GET", "/registry/system/")->status, 404);
}

TEST_F(RegistryRest, AWrongMethodIsA405SayingWhichOneToUse) {
  auto r = call("GET", "/registry/deploy");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->body, json({{"error", "method GET is not allowed on /registry/deploy; use POST"}}));
  EXPECT_EQ(r->headers.at("Allow"), "POST");
  EXPECT_EQ(call("POST", "/registry/system/list")->status, 405);
  EXPECT_EQ(call("DELETE", "/registry/system/266393094")->status, 405);
  EXPECT_EQ(call("GET", "/registry/system/shutdown")->status, 405);
  EXPECT_EQ(call("POST", "/registry/health")->status, 405);
}

TEST_F(RegistryRest, ListAndHealthAnswerAtOnceInTheThesisShape) {
  scripted_node a(table, 1, "266393094"), b(table, 2, "12133208");
  auto list = call("GET", "/registry/system/list");
  ASSERT_TRUE(list);
  ASSERT_EQ(list->body.size(), 2u);
  EXPECT_EQ(list->body[0]["bootstrapperId"], "266393094");
  EXPECT_EQ(list->body[0]["ip"], "127.0.0.1");
  EXPECT_EQ(list->body[0]["port"], "50001");
  EXPECT_EQ(list->body[1]["bootstrapperId"], "12133208");
  auto health = call("GET", "/registry/health");
  EXPECT_EQ(health->body["status"], "ok");
  EXPECT_EQ(health->body["nodes"], 2);
  EXPECT_TRUE(health->body["uptimeSeconds"].is_number_integer());
}

TEST_F(RegistryRest, ShowRelaysTheNodesDescribeAndItsErrors) {
  scripted_node node(table, 1, "266393094");
  EXPECT_FALSE(call("GET", "/registry/system/266393094"));
  EXPECT_EQ(node.last()["action"], "describe");
  json described = {{"sampleSystem", {{{"id", "sampleSystem/consumer"}, {"workersCount", 2}}}}};
  node.ok(request_id(node), described);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  EXPECT_EQ(last->body, described);

  call("GET", "/registry/system/266393094");
  node.ok(request_id(node), json::array());
  EXPECT_EQ(last->status, 502);

  EXPECT_EQ(call("GET", "/registry/system/999")->status, 404);
}

TEST_F(RegistryRest, ANodesErrorIsAnsweredWithItsStatus) {
  scripted_node node(table, 1, "266393094");
  call("POST", "/registry/system/shutdown", R"({"bootstrapperId": "266393094", "isolateSystemName": "s"})");
  EXPECT_EQ(node.last()["action"], "shutdown");
  EXPECT_FALSE(node.last().contains("isolateName"));
  node.fail(request_id(node), 404, "no isolate system \"s\" on this node");
  EXPECT_EQ(last->status, 404);
  EXPECT_EQ(last->body, json({{"error", "no isolate system \"s\" on this node"}}));
}

TEST_F(RegistryRest, KillForwardsTheWorkerIdOrNoneForTheWholePool) {
  scripted_node node(table, 1, "266393094");
  call("POST", "/registry/system/kill",
       R"({"bootstrapperId": "266393094", "isolateSystemName": "s", "isolateName": "c", "workerId": "w-1"})");
  EXPECT_EQ(node.last()["action"], "kill");
  EXPECT_EQ(node.last()["isolateName"], "c");
  EXPECT_EQ(node.last()["workerId"], "w-1");
  node.fail(request_id(node), 404, "no worker \"w-1\" in pool s/c");
  EXPECT_EQ(last->status, 404);
  call("POST", "/registry/system/kill",
       R"({"bootstrapperId": "266393094", "isolateSystemName": "s", "isolateName": "c"})");
  EXPECT_FALSE(node.last().contains("workerId"));
  node.ok(request_id(node), json({{"killed", {"w-1", "w-2"}}}));
  EXPECT_EQ(last->status, 200);
  EXPECT_EQ(last->body["killed"], json({"w-1", "w-2"}));
}

TEST_F(RegistryRest, MigrateWithinANodeForwardsTheNewWorkersPaths) {
  scripted_node node(table, 1, "266393094");
  call("POST", "/registry/migrate",
       R"({"bootstrapperId": "266393094", "isolateSystemName": "s", "isolateName": "c",
           "workersPaths": ["localhost", "ws://127.0.0.1:42042/activator"]})");
  auto frame = node.last();
  EXPECT_EQ(frame["action"], "migrate");
  EXPECT_EQ(frame["isolateSystemName"], "s");
  EXPECT_EQ(frame["isolateName"], "c");
  EXPECT_EQ(frame["workersPaths"], json({"localhost", "ws://127.0.0.1:42042/activator"}));
  node.ok(request_id(node), json::object());
  EXPECT_EQ(last->status, 200);
}

class RegistryMove : public RegistryRest {
 protected:
  void start_move() {
    EXPECT_FALSE(call("POST", "/registry/migrate",
                      R"({"bootstrapperId": "266393094", "isolateSystemName": "sampleSystem",
                          "isolateName": "consumer", "toBootstrapperId": "12133208"})"));
    ASSERT_EQ(source.last()["action"], "describe");
    source.ok(request_id(source), {{"sampleSystem", {pool}}});
  }
  json pool = {{"id", "sampleSystem/consumer"},
               {"workerUri", "/w/libconsumer.so"},
               {"workersCount", 1},
               {"workersPaths", {"localhost"}},
               {"routerType", "roundRobin"},
               {"hotDeployment", true},
               {"deliveryMode", "at-least-once"},
               {"credits", 8},
               {"messageQueuingSystemServer", "ws://127.0.0.1:42043/mqs"}};
  scripted_node source{table, 1, "266393094"};
  scripted_node target{table, 2, "12133208"};
};

TEST_F(RegistryMove, APoolMovesByDeployingOnTheTargetThenShuttingDownOnTheSource) {
  start_move();
  ASSERT_EQ(target.link->requests().size(), 1u);
  auto deploy = target.last();
  EXPECT_EQ(deploy["action"], "deploy");
  EXPECT_EQ(deploy["body"]["bootstrapperId"], "12133208");
  EXPECT_EQ(deploy["body"]["uri"], "/w/libconsumer.so");
  EXPECT_EQ(deploy["body"]["messageQueuingSystemServer"], "ws://127.0.0.1:42043/mqs");
  EXPECT_EQ(deploy["body"]["credits"], 8);
  EXPECT_EQ(source.link->requests().size(), 1u) << "nothing is shut down before the deploy succeeded";
  target.ok(request_id(target),
            {{"isolateSystemName", "sampleSystem"}, {"isolateName", "consumer"}, {"instance", "u"}});

  auto shutdown = source.last();
  EXPECT_EQ(shutdown["action"], "shutdown");
  EXPECT_EQ(shutdown["isolateSystemName"], "sampleSystem");
  EXPECT_EQ(shutdown["isolateName"], "consumer");
  EXPECT_FALSE(last);
  source.ok(request_id(source), json::object());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  EXPECT_EQ(last->body["from"], "266393094");
  EXPECT_EQ(last->body["to"], "12133208");
  EXPECT_EQ(last->body["deploy"]["instance"], "u");
  EXPECT_EQ(last->body["shutdown"], json::object());
}

TEST_F(RegistryMove, AFailedDeployOnTheTargetShutsNothingDown) {
  start_move();
  target.fail(request_id(target), 400, "plugin /w/libconsumer.so does not exist");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 400);
  EXPECT_EQ(last->body["error"],
            "deploying sampleSystem/consumer on node 12133208 failed, nothing was shut down: plugin "
            "/w/libconsumer.so does not exist");
  EXPECT_EQ(source.link->requests().size(), 1u);
}

TEST_F(RegistryMove, APoolTheSourceDoesNotRunIsA404) {
  pool["id"] = "sampleSystem/other";
  start_move();
  EXPECT_EQ(last->status, 404);
  EXPECT_EQ(last->body["error"], "no pool \"sampleSystem/consumer\" on node 266393094");
  EXPECT_TRUE(target.link->requests().empty());
}

TEST_F(RegistryMove, ATargetThatLeavesMidwayFailsTheMoveWith502) {
  start_move();
  table.remove(target.conn);
  EXPECT_EQ(last->status, 502);
  EXPECT_EQ(source.link->requests().size(), 1u);
}

TEST_F(RegistryMove, AnUnknownTargetIsA404) {
  call(
      "POST", "/registry/migrate",
      R"({"bootstrapperId": "266393094", "isolateSystemName": "s", "isolateName": "c", "toBootstrapperId": "5"})");
  EXPECT_EQ(last->status, 404);
  EXPECT_EQ(
      last->body["error"],
      "unknown toBootstrapperId \"5\": no connected node has that id or that name, or several share the "
      "name (GET /registry/system/list)");
}

}  // namespace
}  // namespace dde::registry::test
