// The REST API of a real dde-registry process (thesis 3.2.2 plus DDE's additions), with fake
// nodes answering like real ones: the thesis's samples, every bad input, and pool migration.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "registry_test_process.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;

TEST(RegistryRest, TheThesisSamplesDeployAndReadBackInTheThesisShapes) {
  registry_process registry;
  fake_node a(registry.port(), named("node-a", 42042));
  ASSERT_TRUE(a.wait_registered()) << registry.log();
  fake_node b(registry.port(), named("node-b", 42044));
  ASSERT_TRUE(b.wait_registered()) << registry.log();
  EXPECT_NE(a.id(), b.id());

  // GET /registry/system/list: [{"bootstrapperId", "ip", "port"}], port as a string.
  auto list = registry.get("/registry/system/list");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.content_type, "application/json");
  ASSERT_TRUE(list.body.is_array());
  ASSERT_EQ(list.body.size(), 2u);
  EXPECT_EQ(list.body[0]["bootstrapperId"], a.id());
  EXPECT_EQ(list.body[1]["bootstrapperId"], b.id());
  for (auto& node : list.body) {
    EXPECT_EQ(node["ip"], "127.0.0.1");
    ASSERT_TRUE(node["port"].is_string());
    auto port = std::stoi(node["port"].get<std::string>());
    EXPECT_GT(port, 0);
    EXPECT_NE(port, registry.port()) << "the port is the node's end of its connection";
  }
  EXPECT_EQ(first_keys(list.body[0], 3), (std::vector<std::string>{"bootstrapperId", "ip", "port"}));
  EXPECT_EQ(list.body[0]["activator"], "ws://127.0.0.1:42042/activator");
  EXPECT_EQ(list.body[1]["name"], "node-b");

  // POST /registry/deploy with the sample body: 200, forwarded to the node as given.
  auto body = thesis_deploy_body(a.id());
  auto deployed = registry.post("/registry/deploy", body);
  ASSERT_EQ(deployed.status, 200) << deployed.body.dump();
  EXPECT_EQ(deployed.body["isolateSystemName"], "sampleSystem");
  EXPECT_EQ(deployed.body["isolateName"], "consumer");
  ASSERT_EQ(a.requests().size(), 1u);
  EXPECT_EQ(a.requests()[0]["action"], "deploy");
  EXPECT_EQ(a.requests()[0]["body"], body);
  EXPECT_TRUE(b.requests().empty());

  // GET /registry/system/{id}: {"sampleSystem": [{"id", "workerUri", "workersCount", ...}]}.
  auto shown = registry.get("/registry/system/" + a.id());
  ASSERT_EQ(shown.status, 200);
  ASSERT_TRUE(shown.body.contains("sampleSystem"));
  ASSERT_EQ(shown.body["sampleSystem"].size(), 1u);
  auto pool = shown.body["sampleSystem"][0];
  EXPECT_EQ(pool["id"], "sampleSystem/consumer");
  EXPECT_EQ(pool["workerUri"], body["uri"]);
  EXPECT_EQ(pool["workersCount"], 2);
  EXPECT_EQ(pool["workersPaths"], json({"localhost", "ws://127.0.0.1:42044/activator"}));
  EXPECT_EQ(pool["routerType"], "random");
  EXPECT_EQ(pool["hotDeployment"], true);
  // The node's order is kept: the thesis's.
  EXPECT_EQ(first_keys(pool, 6), (std::vector<std::string>{"id", "workerUri", "workersCount", "workersPaths",
                                                           "routerType", "hotDeployment"}));

  // POST /registry/system/shutdown of one pool, then of the whole isolate system: 200 each.
  auto pool_down = registry.post(
      "/registry/system/shutdown",
      {{"bootstrapperId", a.id()}, {"isolateSystemName", "sampleSystem"}, {"isolateName", "consumer"}});
  EXPECT_EQ(pool_down.status, 200);
  EXPECT_EQ(pool_down.body, json::object());
  EXPECT_EQ(registry.get("/registry/system/" + a.id()).body, json({{"sampleSystem", json::array()}}));
  auto system_down = registry.post("/registry/system/shutdown",
                                   {{"bootstrapperId", a.id()}, {"isolateSystemName", "sampleSystem"}});
  EXPECT_EQ(system_down.status, 200);
  EXPECT_FALSE(a.requests().back().contains("isolateName"));
  EXPECT_EQ(registry.get("/registry/system/" + a.id()).body, json::object());

  auto health = registry.get("/registry/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body["status"], "ok");
  EXPECT_EQ(health.body["nodes"], 2);
  EXPECT_TRUE(health.body["uptimeSeconds"].is_number_integer());

  auto log = registry.log();
  EXPECT_NE(log.find("node " + a.id() + " registered from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("deploy sampleSystem/consumer on node " + a.id() + ": ok"), std::string::npos) << log;
  EXPECT_NE(log.find("shutdown sampleSystem/consumer on node " + a.id() + ": ok"), std::string::npos) << log;
}

TEST(RegistryRest, EveryBadInputGetsItsStatusAndMessageAndNothingDeployedIsTouched) {
  registry_process registry({"--max-body", "4096"});
  fake_node node(registry.port(), named("node-a"));
  ASSERT_TRUE(node.wait_registered());
  auto good = thesis_deploy_body(node.id());
  ASSERT_EQ(registry.post("/registry/deploy", good).status, 200);
  const auto deployed = node.pools();
  const auto forwarded = node.requests().size();

  auto with = [&](const std::string& key, json value) {
    auto b = good;
    b[key] = std::move(value);
    b["isolateName"] = "other";
    return b.dump();
  };
  auto without = [&](const std::string& key) {
    auto b = good;
    b.erase(key);
    return b.dump();
  };
  const std::string names = "names must be 1-100 characters from A-Z a-z 0-9 _ -";
  struct bad_case {
    std::string method, path, body;
    int status;
    std::string error;  ///< exact, or a prefix when it ends with "..."
  };
  std::vector<bad_case> cases = {
      {"POST", "/registry/deploy", "{\"bootstrapperId\": ", 400,
       "body is not valid JSON: parse error at line 1..."},
      {"POST", "/registry/deploy", "[1, 2]", 400, "body must be a JSON object"},
      {"POST", "/registry/deploy", without("bootstrapperId"), 400, "missing field \"bootstrapperId\""},
      {"POST", "/registry/deploy", without("uri"), 400,
       "missing field \"uri\" (the worker plugin: a .so path, file://, http:// or https:// URI)"},
      {"POST", "/registry/deploy", with("hotDeployment", "yes"), 400,
       "field \"hotDeployment\" must be true or false"},
      {"POST", "/registry/deploy", with("workersPaths", "localhost"), 400,
       "field \"workersPaths\" must be a non-empty array"},
      {"POST", "/registry/deploy", with("action", "action.removeIsolate"), 400,
       "field \"action\" is \"action.removeIsolate\": the only action is \"action.addIsolate\""},
      {"POST", "/registry/deploy", with("isolateSystemName", "sample.system"), 400,
       "field \"isolateSystemName\" is \"sample.system\": " + names},
      {"POST", "/registry/deploy", with("routerType", "fastest"), 400,
       "unknown routerType \"fastest\": use roundRobin, random, broadcast, smallestMailbox, "
       "consistentHash, scatterGather, tailChopping, or the path of a custom router .so"},
      {"POST", "/registry/deploy", with("messageQueuingSystemServer", "http://127.0.0.1:42043/mqs"), 400,
       "field \"messageQueuingSystemServer\" is \"http://127.0.0.1:42043/mqs\": expected a WebSocket URL "
       "ws://host:port/path (or several, comma-separated, to fail over between)"},
      {"POST", "/registry/deploy", with("bootstrapperId", "12133208"), 404,
       "unknown bootstrapperId \"12133208\": no connected node has that id or that name, or several share "
       "the name (GET /registry/system/list)"},
      {"POST", "/registry/deploy", std::string(5000, ' '), 413, "request body exceeds 4096 bytes"},
      {"GET", "/registry/system/12133208", "", 404,
       "unknown bootstrapperId \"12133208\": no connected node has that id or that name, or several share "
       "the name (GET /registry/system/list)"},
      {"GET", "/registry/nodes", "", 404, "unknown path \"/registry/nodes\"; the registry serves..."},
      {"DELETE", "/registry/deploy", "", 405, "method DELETE is not allowed on /registry/deploy; use POST"},
      {"POST", "/registry/system/list", "{}", 405,
       "method POST is not allowed on /registry/system/list; use GET"},
      {"POST", "/registry/system/shutdown", json({{"bootstrapperId", node.id()}}).dump(), 400,
       "missing field \"isolateSystemName\""},
      // Errors of the node come back with the node's status.
      {"POST", "/registry/system/shutdown",
       json({{"bootstrapperId", node.id()}, {"isolateSystemName", "sampleSystem"}, {"isolateName", "nope"}})
           .dump(),
       404, "no pool \"sampleSystem/nope\" on this node"},
      {"POST", "/registry/deploy", good.dump(), 409,
       "pool \"sampleSystem/consumer\" already runs on this node"},
      {"POST", "/registry/migrate",
       json({{"bootstrapperId", node.id()},
             {"isolateSystemName", "sampleSystem"},
             {"isolateName", "consumer"}})
           .dump(),
       400,
       "give \"workersPaths\" (new worker paths on the same node) and/or \"toBootstrapperId\" (the node to "
       "move the "
       "pool to)"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body.substr(0, 200));
    auto r = registry.call(c.method, c.path, c.body);
    EXPECT_EQ(r.status, c.status);
    EXPECT_EQ(r.content_type, "application/json");
    auto error = error_of(r);
    if (c.error.size() > 3 && c.error.compare(c.error.size() - 3, 3, "...") == 0)
      EXPECT_EQ(error.rfind(c.error.substr(0, c.error.size() - 3), 0), 0u) << error;
    else
      EXPECT_EQ(error, c.error);
    // The registry still serves, and what runs is untouched.
    auto list = registry.get("/registry/system/list");
    ASSERT_EQ(list.status, 200);
    EXPECT_EQ(list.body.size(), 1u);
    EXPECT_EQ(node.pools(), deployed);
  }
  EXPECT_TRUE(registry.running());
  // Only the two requests that were valid for the registry reached the node.
  EXPECT_EQ(node.requests().size(), forwarded + 2);
  auto shown = registry.get("/registry/system/" + node.id());
  EXPECT_EQ(shown.status, 200);
  EXPECT_EQ(shown.body, deployed);
}

// Sends `request` as it is over a fresh loopback connection; returns all the server wrote before
// closing, or the first 4 KiB.
std::string raw_exchange(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    ssize_t n;
    while (answer.size() < 4096 && (n = ::recv(fd, buf, sizeof buf, 0)) > 0)
      answer.append(buf, std::size_t(n));
  }
  ::close(fd);
  return answer;
}

// Found by the registry_rest fuzzer: an error text quoting a target that is not UTF-8 made the JSON
// encoder throw, and a WebSocket upgrade to such a path stopped the whole daemon.
TEST(RegistryRest, ATargetThatIsNotUtf8GetsItsErrorAndTheRegistryGoesOn) {
  registry_process registry;
  const std::string upgrade =
      "GET /\xff\xfe HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  auto answer = raw_exchange(registry.port(), upgrade);
  EXPECT_EQ(answer.rfind("HTTP/1.1 404", 0), 0u) << answer;
  EXPECT_NE(answer.find("no WebSocket endpoint at /"), std::string::npos) << answer;

  auto rest = raw_exchange(registry.port(),
                           "GET /registry/\xc3\x28 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(rest.rfind("HTTP/1.1 404", 0), 0u) << rest;
  EXPECT_NE(rest.find("unknown path"), std::string::npos) << rest;

  EXPECT_TRUE(registry.running()) << registry.log();
  EXPECT_EQ(registry.get("/registry/health").status, 200);
}

TEST(RegistryMigrate, APoolMovesWithinANodeAndBetweenNodes) {
  registry_process registry;
  fake_node a(registry.port(), named("node-a", 42042));
  ASSERT_TRUE(a.wait_registered());
  fake_node b(registry.port(), named("node-b", 42044));
  ASSERT_TRUE(b.wait_registered());
  auto body = thesis_deploy_body(a.id());
  body["deliveryMode"] = "at-least-once";
  body["credits"] = 4;
  ASSERT_EQ(registry.post("/registry/deploy", body).status, 200);

  auto within =
      registry.post("/registry/migrate", {{"bootstrapperId", a.id()},
                                          {"isolateSystemName", "sampleSystem"},
                                          {"isolateName", "consumer"},
                                          {"workersPaths", {"localhost", "localhost", "localhost"}}});
  EXPECT_EQ(within.status, 200) << within.body.dump();
  EXPECT_EQ(a.pools()["sampleSystem"][0]["workersCount"], 3);

  auto moved = registry.post("/registry/migrate", {{"bootstrapperId", a.id()},
                                                   {"isolateSystemName", "sampleSystem"},
                                                   {"isolateName", "consumer"},
                                                   {"toBootstrapperId", b.id()}});
  ASSERT_EQ(moved.status, 200) << moved.body.dump();
  EXPECT_EQ(moved.body["from"], a.id());
  EXPECT_EQ(moved.body["to"], b.id());
  EXPECT_EQ(moved.body["deploy"]["isolateName"], "consumer");
  EXPECT_EQ(a.pools()["sampleSystem"], json::array());
  auto on_b = registry.get("/registry/system/" + b.id()).body["sampleSystem"][0];
  EXPECT_EQ(on_b["workerUri"], body["uri"]);
  EXPECT_EQ(on_b["workersPaths"], json({"localhost", "localhost", "localhost"}));
  EXPECT_EQ(on_b["routerType"], "random");
  EXPECT_EQ(on_b["credits"], 4);
  EXPECT_EQ(on_b["messageQueuingSystemServer"], "ws://127.0.0.1:42043/mqs");

  // Back to A, where the same pool is deployed meanwhile: the deploy fails and B keeps it.
  body["workersPaths"] = {"localhost"};
  ASSERT_EQ(registry.post("/registry/deploy", body).status, 200);
  auto refused = registry.post("/registry/migrate", {{"bootstrapperId", b.id()},
                                                     {"isolateSystemName", "sampleSystem"},
                                                     {"isolateName", "consumer"},
                                                     {"toBootstrapperId", a.id()}});
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(error_of(refused),
            "deploying sampleSystem/consumer on node " + a.id() +
                " failed, nothing was shut down: pool \"sampleSystem/consumer\" already runs on "
                "this node");
  EXPECT_EQ(b.pools()["sampleSystem"].size(), 1u);
  EXPECT_NE(registry.log().find("migrate sampleSystem/consumer from node " + a.id() + " to node " + b.id() +
                                ": ok"),
            std::string::npos);
}

TEST(RegistryDaemon, TellsSystemdItIsReadyOnceItListens) {
  // Type=notify in dde-registry.service: READY=1 on $NOTIFY_SOCKET once the port is open.
  auto dir = dde::test::fresh_dir("notify");
  auto path = (dir / "notify.sock").string();
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  auto port = dde::test::free_port();
  dde::test::child_process registry(
      {dde::test::bin_path("dde-registry").string(), "--port", std::to_string(port)}, dir / "registry.log",
      {{"NOTIFY_SOCKET", path}});
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1) << "no notification within 30 s:\n" << registry.log();
  char buf[512] = {};
  auto n = ::recv(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  ASSERT_GT(n, 0);
  std::string state(buf, std::size_t(n));
  EXPECT_EQ(state, "READY=1\nSTATUS=listening on port " + std::to_string(port));
  EXPECT_TRUE(dde::test::port_open(port)) << "ready means it listens";
}

}  // namespace
}  // namespace dde::registry::test
