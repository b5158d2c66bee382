// The pool spec as a contract: a deploy body read into a spec and written back as a deploy body
// (to_deploy_body, what a proxy sends to spawn a remote worker) reads back into the same spec.
#include <gtest/gtest.h>

#include <algorithm>

#include "dde/protocol/pool_spec.hpp"

namespace dde {
namespace {

nlohmann::json round_trip(const nlohmann::json& body) {
  auto spec = parse_pool_spec(body, "sys");
  EXPECT_TRUE(spec) << spec.error();
  if (!spec) return nullptr;
  auto again = parse_pool_spec(to_deploy_body(spec.value()));
  EXPECT_TRUE(again) << again.error();
  if (!again) return nullptr;
  EXPECT_EQ(to_deploy_body(again.value()), to_deploy_body(spec.value()));
  return to_deploy_body(again.value());
}

TEST(PoolSpec, ADeployBodyWithEveryFieldReadsBackAsTheSameSpec) {
  auto body = nlohmann::json::parse(R"({
    "isolateName": "c", "uri": "https://plugins.example/w.so", "sha256": ")" +
                                    std::string(64, 'a') + R"(",
    "workersPaths": ["localhost", "localhost"], "routerType": "consistentHash", "hashKey": "k",
    "rate": {"messages": 5, "perMs": 100}, "maxInFlight": 3, "credits": 16, "deliveryMode": "at-most-once",
    "subPools": {"key": "tenant", "capacity": {"a": 2}, "defaultCapacity": 1},
    "supervision": {"strategy": "escalate", "maxRestarts": 3, "withinMs": 1000, "backoffMs": 5,
                    "failedMessage": "dead-letter", "maxFailures": 7},
    "backoff": {"retryLimit": 2, "maxDelayMs": 1000}, "failover": true, "pingAfterMs": 100,
    "pongTimeoutMs": 900, "hotDeployment": false, "args": {"x": [1, 2]}})");
  auto back = round_trip(body);
  ASSERT_TRUE(back.is_object());
  EXPECT_EQ(back["isolateSystemName"], "sys");
  EXPECT_EQ(back["isolateName"], "c");
  EXPECT_EQ(back["uri"], "https://plugins.example/w.so");
  EXPECT_EQ(back["hashKey"], "k");
  EXPECT_EQ(back["rate"], (nlohmann::json{{"messages", 5}, {"perMs", 100}}));
  EXPECT_EQ(back["subPools"]["capacity"]["a"], 2);
  EXPECT_EQ(back["supervision"]["failedMessage"], "dead-letter");
  EXPECT_EQ(back["supervision"]["maxFailures"], 7);
  EXPECT_EQ(back["args"], (nlohmann::json{{"x", {1, 2}}}));
  EXPECT_FALSE(back.contains("id")) << "a deploy body, not a description";
}

TEST(PoolSpec, APartitionedPoolReadsBackAndRoutesByItsKey) {
  auto back =
      round_trip(nlohmann::json::parse(R"({"isolateName": "c", "uri": "w.so", "routerType": "roundRobin",
    "partitions": {"count": 16, "key": "customerId"}})"));
  ASSERT_TRUE(back.is_object());
  EXPECT_EQ(back["partitions"], (nlohmann::json{{"count", 16}, {"key", "customerId"}}));
  auto spec = parse_pool_spec(back, "sys");
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec.value().router, router_kind::consistent_hash);
  EXPECT_EQ(spec.value().hash_key, "customerId");
  auto refused = [](const char* body) {
    auto s = parse_pool_spec(nlohmann::json::parse(body), "sys");
    return s ? std::string("accepted") : s.error();
  };
  EXPECT_EQ(refused(R"({"isolateName": "c", "uri": "w.so", "partitions": {"count": 2000, "key": "k"}})"),
            "field \"partitions.count\" must be a whole number 1..1024");
  EXPECT_EQ(refused(R"({"isolateName": "c", "uri": "w.so", "partitions": {"count": 4, "key": "a.b"}})"),
            "field \"partitions.key\" must be the name of a message body field ([A-Za-z0-9_-], at most 100 "
            "characters)");
  EXPECT_EQ(refused(R"({"isolateName": "c", "uri": "w.so", "partitions": {"count": 4, "key": "k", "x": 1}})"),
            "unknown field \"partitions.x\": partitions has count and key");
  EXPECT_EQ(refused(R"({"isolateName": "c", "uri": "w.so", "partitions": 4})"),
            "field \"partitions\" must be an object: {\"count\": 16, \"key\": \"customerId\"}");
  EXPECT_EQ(
      refused(
          R"({"isolateName": "c", "uri": "w.so", "hashKey": "u", "partitions": {"count": 4, "key": "k"}})"),
      "hashKey \"u\" differs from partitions.key \"k\"");
}

TEST(PoolSpec, TailChoppingAndScalingReadBack) {
  auto back = round_trip(nlohmann::json::parse(
      R"({"isolateName": "c", "uri": "/w.so", "routerType": "tailChopping", "tailChopDelayMs": 50,
          "scale": {"min": 1, "max": 4, "cooldownMs": 2000}})"));
  ASSERT_TRUE(back.is_object());
  EXPECT_EQ(back["tailChopDelayMs"], 50);
  EXPECT_EQ(back["scale"]["max"], 4);
  EXPECT_EQ(back["scale"]["cooldownMs"], 2000);
}

TEST(PoolSpec, ACanaryReadsBackAndTakesItsShareOfTheLocalWorkers) {
  auto back = round_trip(nlohmann::json::parse(
      R"({"isolateName": "c", "uri": "/w.so", "canary": {"percent": 25, "windowMs": 500, "minMessages": 7,
          "maxFailureRateIncrease": 0.1}})"));
  ASSERT_TRUE(back.is_object());
  EXPECT_EQ(back["canary"],
            (nlohmann::json{
                {"percent", 25}, {"windowMs", 500}, {"minMessages", 7}, {"maxFailureRateIncrease", 0.1}}));
  auto defaults =
      parse_pool_spec(nlohmann::json::parse(R"({"isolateName": "c", "uri": "/w.so", "canary": {}})"), "s");
  ASSERT_TRUE(defaults) << defaults.error();
  const auto& c = defaults.value().canary;
  EXPECT_EQ(c.workers, 1u);
  EXPECT_EQ(c.window.count(), 60000);
  EXPECT_EQ(c.min_messages, 20u);
  EXPECT_DOUBLE_EQ(c.max_increase, 0.05);
  EXPECT_FALSE(parse_pool_spec(nlohmann::json::parse(R"({"isolateName": "c", "uri": "/w.so"})"), "s")
                   .value()
                   .canary.enabled());
  canary_spec quarter;
  quarter.percent = 25;
  EXPECT_EQ(quarter.share_of(10), 3u) << "rounded up";
  EXPECT_EQ(quarter.share_of(1), 1u) << "a one-worker pool: the canary has it";
  canary_spec many;
  many.workers = 8;
  EXPECT_EQ(many.share_of(4), 3u) << "the old version keeps one worker to compare with";
}

TEST(PoolSpec, ABadCanaryIsRefusedWithWhatIsWrong) {
  auto error = [](const std::string& canary, const std::string& extra = "") {
    auto spec = parse_pool_spec(
        nlohmann::json::parse(R"({"isolateName": "c", "uri": "/w.so", "canary": )" + canary + extra + "}"),
        "s");
    return spec ? std::string() : spec.error();
  };
  EXPECT_NE(error("5").find("field \"canary\" must be {"), std::string::npos);
  EXPECT_NE(error(R"({"workers": 0})").find("canary.workers must be an integer from 1 to 1024, got 0"),
            std::string::npos);
  EXPECT_NE(error(R"({"percent": 101})").find("canary.percent must be an integer from 1 to 100"),
            std::string::npos);
  EXPECT_NE(error(R"({"workers": 1, "percent": 10})").find("exclude each other"), std::string::npos);
  EXPECT_NE(error(R"({"windowMs": 10})").find("canary.windowMs must be an integer from 100 to 86400000"),
            std::string::npos);
  EXPECT_NE(error(R"({"minMessages": "20"})").find("canary.minMessages must be"), std::string::npos);
  EXPECT_NE(error(R"({"maxFailureRateIncrease": 5})")
                .find("canary.maxFailureRateIncrease must be a number from 0 to 1"),
            std::string::npos);
  EXPECT_NE(error(R"({"window": 1000})").find("unknown field canary.window"), std::string::npos);
  EXPECT_NE(error("{}", R"(, "hotDeployment": false)").find("needs \"hotDeployment\": true"),
            std::string::npos);
}

TEST(PoolSpec, APoolDeployedAgainFromItsDescriptionIsThePoolItWas) {
  // What an activator does with the pools of an isolate system it adopted: their descriptions (with
  // what the host adds) become deploy bodies again when the system has to be redeployed.
  for (auto text :
       {R"({"isolateName": "c", "uri": "/w.so", "workersPaths": ["localhost", "localhost"],
                        "routerType": "consistentHash", "hashKey": "k", "backoff": {"retryLimit": 2, "maxDelayMs": 10},
                        "subPools": {"key": "tenant", "capacity": {"a": 2}, "defaultCapacity": 1},
                        "failover": true, "rate": {"messages": 5, "perMs": 100}, "args": {"x": 1}})",
        R"({"isolateName": "t", "uri": "/w.so", "routerType": "tailChopping", "tailChopDelayMs": 50,
                        "scale": {"min": 1, "max": 4, "cooldownMs": 2000}, "deliveryMode": "at-most-once"})"}) {
    auto spec = parse_pool_spec(nlohmann::json::parse(text), "sys");
    ASSERT_TRUE(spec) << spec.error();
    auto described = to_json(spec.value());
    described["workers"] = nlohmann::json::array({{{"id", "w1"}, {"inFlight", 0}}});
    described["stats"] = {{"delivered", 3}};
    described["pluginMd5"] = "abc";
    described["messageQueuingSystemServer"] = "ws://127.0.0.1:9/mqs";
    auto body = deploy_body_of_description("sys", described);
    EXPECT_EQ(body["messageQueuingSystemServer"], "ws://127.0.0.1:9/mqs");
    EXPECT_FALSE(body.contains("stats"));
    auto again = parse_pool_spec(body);
    ASSERT_TRUE(again) << again.error() << " in " << body.dump();
    EXPECT_EQ(to_deploy_body(again.value()), to_deploy_body(spec.value()));
  }
}

}  // namespace
}  // namespace dde

namespace dde {
namespace {

TEST(PoolSpec, ItsFieldsAreWhatADeployBodyCarriesAndTheParserReads) {
  std::vector<std::string> expected = {"args",
                                       "backoff",
                                       "canary",
                                       "credits",
                                       "deliveryMode",
                                       "failover",
                                       "hashKey",
                                       "hotDeployment",
                                       "hotDeploymentIntervalMs",
                                       "isolateName",
                                       "isolateSystemName",
                                       "maxInFlight",
                                       "partitions",
                                       "pingAfterMs",
                                       "pongTimeoutMs",
                                       "rate",
                                       "retry",
                                       "routerType",
                                       "scale",
                                       "sha256",
                                       "subPools",
                                       "supervision",
                                       "tailChopDelayMs",
                                       "uri",
                                       "workersPaths"};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(pool_spec_fields(), expected);
}

}  // namespace
}  // namespace dde
