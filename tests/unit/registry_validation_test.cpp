// The registry checks every REST body before anything reaches a node: each bad deploy, shutdown
// and migrate body gets its exact status and message, and no frame is sent.
#include <gtest/gtest.h>

#include "pool_mover.hpp"
#include "registry_fakes.hpp"
#include "rest_api.hpp"
#include "rest_validation.hpp"

namespace dde::registry::test {
namespace {

/// The thesis's sample deploy body (3.2.2), adapted to loopback and a .so plugin.
json thesis_deploy_body() {
  return json::parse(R"({
    "bootstrapperId" : "266393094",
    "action": "action.addIsolate",
    "messageQueuingSystemServer": "ws://127.0.0.1:42043/mqs",
    "isolateSystemName" : "sampleSystem",
    "isolateName" : "consumer",
    "uri" : "/opt/dde/lib/workers/libconsumer.so",
    "workersPaths" : ["localhost", "ws://127.0.0.1:42042/activator"],
    "routerType" : "random",
    "hotDeployment" : true
  })");
}

class RegistryValidation : public ::testing::Test {
 protected:
  /// POSTs `body` to `path`; the reply must come at once (nothing was forwarded).
  rest_reply post(const std::string& path, const std::string& body) {
    auto got = std::make_shared<std::optional<rest_reply>>();
    api.handle({"POST", path, body, "127.0.0.1:1"}, [got](rest_reply r) { *got = std::move(r); });
    EXPECT_TRUE(got->has_value()) << "no immediate answer for " << body;
    return got->value_or(rest_reply{});
  }
  /// Expects `body` on /registry/deploy to be refused with `status` and exactly `message`.
  void expect_deploy_refused(const json& body, int status, const std::string& message) {
    auto r = post("/registry/deploy", body.dump());
    EXPECT_EQ(r.status, status) << body.dump();
    EXPECT_EQ(r.body, json({{"error", message}})) << body.dump();
    EXPECT_TRUE(node.link->requests().empty()) << "a bad body reached the node: " << body.dump();
  }
  json with(const std::string& key, json value) {
    auto b = thesis_deploy_body();
    b[key] = std::move(value);
    return b;
  }
  json without(const std::string& key) {
    auto b = thesis_deploy_body();
    b.erase(key);
    return b;
  }

  node_table table{node_table::options{}};
  scripted_node node{table, 1, "266393094"};
  rest_api api{table};
};

TEST_F(RegistryValidation, TheThesisSampleBodyIsForwardedToItsNodeAsGiven) {
  auto got = std::make_shared<std::optional<rest_reply>>();
  api.handle({"POST", "/registry/deploy", thesis_deploy_body().dump(), "x"},
             [got](rest_reply r) { *got = r; });
  ASSERT_FALSE(*got);
  ASSERT_EQ(node.link->requests().size(), 1u);
  auto frame = node.last();
  EXPECT_EQ(frame["action"], "deploy");
  EXPECT_EQ(frame["body"], thesis_deploy_body());
}

TEST_F(RegistryValidation, MalformedJsonIsA400NamingTheParseError) {
  auto r = post("/registry/deploy", "{\"bootstrapperId\": ");
  EXPECT_EQ(r.status, 400);
  auto error = r.body.at("error").get<std::string>();
  EXPECT_EQ(error.rfind("body is not valid JSON: parse error at line 1, column 20", 0), 0u) << error;
  EXPECT_EQ(
      post("/registry/deploy", "").body.at("error").get<std::string>().rfind("body is not valid JSON: ", 0),
      0u);
}

TEST_F(RegistryValidation, ANumberNoDoubleHoldsIsA400NotACrash) {
  // Found by registry_rest_fuzz: nlohmann reports it as out_of_range, not parse_error.
  for (const char* body : {"5E555555555555", "{\"bootstrapperId\": 1e400}"}) {
    auto r = post("/registry/deploy", body);
    EXPECT_EQ(r.status, 400) << body;
    auto error = r.body.at("error").get<std::string>();
    EXPECT_EQ(error.rfind("body is not valid JSON: number overflow", 0), 0u) << error;
  }
  EXPECT_TRUE(node.link->requests().empty());
}

TEST_F(RegistryValidation, ABodyThatIsNotAnObjectIsRefused) {
  expect_deploy_refused(json::array({1, 2}), 400, "body must be a JSON object");
}

TEST_F(RegistryValidation, EachMissingRequiredDeployFieldIsNamed) {
  expect_deploy_refused(without("bootstrapperId"), 400, "missing field \"bootstrapperId\"");
  expect_deploy_refused(without("action"), 400, "missing field \"action\" (use \"action.addIsolate\")");
  expect_deploy_refused(without("messageQueuingSystemServer"), 400,
                        "missing field \"messageQueuingSystemServer\"");
  expect_deploy_refused(without("isolateSystemName"), 400, "missing field \"isolateSystemName\"");
  expect_deploy_refused(without("isolateName"), 400, "missing field \"isolateName\"");
  expect_deploy_refused(
      without("uri"), 400,
      "missing field \"uri\" (the worker plugin: a .so path, file://, http:// or https:// URI)");
}

TEST_F(RegistryValidation, EachMistypedDeployFieldIsNamed) {
  expect_deploy_refused(with("bootstrapperId", 266393094), 400,
                        "field \"bootstrapperId\" must be a non-empty string (e.g. \"266393094\")");
  expect_deploy_refused(with("messageQueuingSystemServer", 42043), 400,
                        "field \"messageQueuingSystemServer\" must be a non-empty string (e.g. "
                        "\"ws://127.0.0.1:42043/mqs\")");
  expect_deploy_refused(with("isolateName", 7), 400, "field \"isolateName\" must be a string");
  expect_deploy_refused(with("uri", ""), 400, "field \"uri\" must be a non-empty string");
  expect_deploy_refused(with("workersPaths", "localhost"), 400,
                        "field \"workersPaths\" must be a non-empty array");
  expect_deploy_refused(with("workersPaths", json::array()), 400,
                        "field \"workersPaths\" must be a non-empty array");
  expect_deploy_refused(with("workersPaths", {"localhost", 3}), 400,
                        "every entry of \"workersPaths\" must be a string");
  expect_deploy_refused(with("routerType", 1), 400, "field \"routerType\" must be a string");
  expect_deploy_refused(with("hotDeployment", "yes"), 400, "field \"hotDeployment\" must be true or false");
  expect_deploy_refused(with("deliveryMode", "exactly-once"), 400,
                        "field \"deliveryMode\" must be \"at-least-once\" or \"at-most-once\"");
  expect_deploy_refused(with("credits", 0), 400, "field \"credits\" must be an integer from 1 to 4096");
  expect_deploy_refused(with("credits", "8"), 400, "field \"credits\" must be an integer from 1 to 4096");
  expect_deploy_refused(with("supervision", {{"maxFailures", -1}}), 400,
                        "supervision.maxFailures must be an integer from 0 to 1000 (0: no limit)");
}

TEST_F(RegistryValidation, AnActionOtherThanAddIsolateIsRefused) {
  expect_deploy_refused(
      with("action", "action.removeIsolate"), 400,
      "field \"action\" is \"action.removeIsolate\": the only action is \"action.addIsolate\"");
  expect_deploy_refused(with("action", 5), 400,
                        "field \"action\" is 5: the only action is \"action.addIsolate\"");
}

TEST_F(RegistryValidation, NamesThatCannotBeQueueNamesAreRefused) {
  expect_deploy_refused(
      with("isolateSystemName", "sample.system"), 400,
      "field \"isolateSystemName\" is \"sample.system\": names must be 1-100 characters from A-Z "
      "a-z 0-9 _ -");
  expect_deploy_refused(
      with("isolateName", "con sumer"), 400,
      "field \"isolateName\" is \"con sumer\": names must be 1-100 characters from A-Z a-z 0-9 _ -");
  expect_deploy_refused(with("isolateName", std::string(101, 'a')), 400,
                        "field \"isolateName\" is \"" + std::string(101, 'a') +
                            "\": names must be 1-100 characters from A-Z a-z 0-9 _ -");
}

TEST_F(RegistryValidation, AnUnknownRouterTypeIsRefused) {
  expect_deploy_refused(with("routerType", "fastestFirst"), 400,
                        "unknown routerType \"fastestFirst\": use roundRobin, random, broadcast, "
                        "smallestMailbox, consistentHash, "
                        "scatterGather, tailChopping, or the path of a custom router .so");
}

TEST_F(RegistryValidation, AnUnknownFieldIsRefusedByNameWithTheFieldItProbablyMeant) {
  expect_deploy_refused(with("routertype", "random"), 400,
                        "unknown field \"routertype\" (did you mean \"routerType\"?)");
  auto r = post("/registry/deploy", with("workerCount", 3).dump());
  EXPECT_EQ(r.status, 400);
  auto error = r.body["error"].get<std::string>();
  EXPECT_EQ(error.rfind("unknown field \"workerCount\"; a deploy body has action bootstrapperId "
                        "messageQueuingSystemServer args backoff ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find(" workersPaths"), std::string::npos) << error;
  // What only the activator adds to a redeploy is not for a user to send.
  expect_deploy_refused(
      with("lastGoodCopy", "/tmp/x.so"), 400,
      "unknown field \"lastGoodCopy\"; a deploy body has action bootstrapperId "
      "messageQueuingSystemServer args backoff canary credits deliveryMode failover hashKey "
      "hotDeployment hotDeploymentIntervalMs isolateName isolateSystemName maxInFlight partitions "
      "pingAfterMs "
      "pongTimeoutMs "
      "rate retry routerType scale sha256 subPools supervision tailChopDelayMs uri workersPaths");
  EXPECT_TRUE(node.link->requests().empty());
}

TEST_F(RegistryValidation, AnMqsAddressThatIsNotAWebSocketUrlIsRefused) {
  for (const char* bad : {"http://127.0.0.1:42043/mqs", "ws://:42043/mqs", "ws://127.0.0.1:99999/mqs", "mqs"})
    expect_deploy_refused(
        with("messageQueuingSystemServer", bad), 400,
        std::string("field \"messageQueuingSystemServer\" is \"") + bad +
            "\": expected a WebSocket URL ws://host:port/path (or several, comma-separated, to fail over "
            "between)");
}

TEST_F(RegistryValidation, AWorkersPathThatIsNeitherLocalhostNorAnActivatorUrlIsRefused) {
  expect_deploy_refused(
      with("workersPaths", {"localhost", "http://127.0.0.1:42042/activator"}), 400,
      "workersPaths entry \"http://127.0.0.1:42042/activator\" is neither \"localhost\" nor an "
      "activator URL ws://host:port/activator (wss:// with TLS)");
}

TEST_F(RegistryValidation, AnUnknownBootstrapperIdIsA404AfterTheBodyIsValid) {
  expect_deploy_refused(
      with("bootstrapperId", "12133208"), 404,
      "unknown bootstrapperId \"12133208\": no connected node has that id or that name, or several share "
      "the name (GET /registry/system/list)");
}

TEST_F(RegistryValidation, ShutdownBodiesAreChecked) {
  auto refused = [&](const json& body, const std::string& message) {
    auto r = post("/registry/system/shutdown", body.dump());
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body, json({{"error", message}}));
  };
  refused({{"isolateSystemName", "sampleSystem"}}, "missing field \"bootstrapperId\"");
  refused({{"bootstrapperId", "266393094"}}, "missing field \"isolateSystemName\"");
  refused({{"bootstrapperId", "266393094"}, {"isolateSystemName", "a/b"}},
          "field \"isolateSystemName\" is \"a/b\": names must be 1-100 characters from A-Z a-z 0-9 _ -");
  refused({{"bootstrapperId", "266393094"}, {"isolateSystemName", "s"}, {"isolateName", 1}},
          "field \"isolateName\" must be a string");
  EXPECT_TRUE(node.link->requests().empty());
  auto r =
      post("/registry/system/shutdown", json({{"bootstrapperId", "1"}, {"isolateSystemName", "s"}}).dump());
  EXPECT_EQ(r.status, 404);
}

TEST_F(RegistryValidation, KillBodiesAreChecked) {
  auto refused = [&](const json& body, const std::string& message) {
    auto r = post("/registry/system/kill", body.dump());
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body, json({{"error", message}}));
  };
  json base = {{"bootstrapperId", "266393094"}, {"isolateSystemName", "s"}, {"isolateName", "c"}};
  auto no_isolate = base;
  no_isolate.erase("isolateName");
  refused(no_isolate, "missing field \"isolateName\"");
  auto numeric = base;
  numeric["workerId"] = 7;
  refused(numeric,
          "field \"workerId\" must be a non-empty string (e.g. \"3f0c9a52-8d1e-4b7a-9c55-0e2f1a7b6d21\"); "
          "leave it "
          "out to kill every worker of the pool");
  auto empty = base;
  empty["workerId"] = "";
  EXPECT_EQ(post("/registry/system/kill", empty.dump()).status, 400);
  auto long_id = base;
  long_id["workerId"] = std::string(101, 'a');
  refused(long_id, "field \"workerId\" is longer than 100 characters");
  EXPECT_TRUE(node.link->requests().empty());
  auto unknown_node = base;
  unknown_node["bootstrapperId"] = "1";
  EXPECT_EQ(post("/registry/system/kill", unknown_node.dump()).status, 404);
}

TEST_F(RegistryValidation, MigrateBodiesAreChecked) {
  auto refused = [&](const json& body, const std::string& message) {
    auto r = post("/registry/migrate", body.dump());
    EXPECT_EQ(r.status, 400) << body.dump();
    EXPECT_EQ(r.body, json({{"error", message}}));
  };
  json base = {
      {"bootstrapperId", "266393094"}, {"isolateSystemName", "sampleSystem"}, {"isolateName", "consumer"}};
  refused(base,
          "give \"workersPaths\" (new worker paths on the same node) and/or \"toBootstrapperId\" (the node "
          "to move the "
          "pool to)");
  auto same = base;
  same["toBootstrapperId"] = "266393094";
  refused(same,
          "\"toBootstrapperId\" is the node the pool runs on; give only \"workersPaths\" to move its workers "
          "within "
          "that node");
  auto bad_paths = base;
  bad_paths["workersPaths"] = {"ftp://x"};
  refused(bad_paths,
          "workersPaths entry \"ftp://x\" is neither \"localhost\" nor an activator URL "
          "ws://host:port/activator (wss:// with TLS)");
  auto no_isolate = base;
  no_isolate.erase("isolateName");
  no_isolate["workersPaths"] = {"localhost"};
  refused(no_isolate, "missing field \"isolateName\"");
  EXPECT_TRUE(node.link->requests().empty());
}

TEST(RegistryValidationCodec, ARedeployBodyKeepsTheSpecAndDropsRuntimeFields) {
  json entry = {{"id", "sampleSystem/consumer"},
                {"workerUri", "/w/libconsumer.so"},
                {"workersCount", 2},
                {"workersPaths", {"localhost", "localhost"}},
                {"routerType", "random"},
                {"hotDeployment", false},
                {"deliveryMode", "at-most-once"},
                {"credits", 4},
                {"args", {{"k", 1}}},
                {"messageQueuingSystemServer", "ws://127.0.0.1:42043/mqs"},
                {"stats", {{"handled", 10}}},
                {"state", "running"},
                {"pid", 1234},
                {"restarts", 0},
                {"workers", {{{"id", "w1"}, {"state", "running"}}}},
                {"pluginMd5", "0123"},
                {"instance", "i-1"},
                {"hashKey", nullptr},
                {"someFutureRuntimeField", 1}};
  auto body = redeploy_body(entry, "sampleSystem", "12133208");
  ASSERT_TRUE(body) << body.error();
  EXPECT_EQ(body.value(), json({{"bootstrapperId", "12133208"},
                                {"action", "action.addIsolate"},
                                {"messageQueuingSystemServer", "ws://127.0.0.1:42043/mqs"},
                                {"isolateSystemName", "sampleSystem"},
                                {"isolateName", "consumer"},
                                {"uri", "/w/libconsumer.so"},
                                {"workersPaths", {"localhost", "localhost"}},
                                {"routerType", "random"},
                                {"hotDeployment", false},
                                {"deliveryMode", "at-most-once"},
                                {"credits", 4},
                                {"args", {{"k", 1}}}}));
  entry.erase("messageQueuingSystemServer");
  EXPECT_FALSE(redeploy_body(entry, "sampleSystem", "1"));
}

}  // namespace
}  // namespace dde::registry::test
