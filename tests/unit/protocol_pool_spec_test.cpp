// The pool spec as a contract: a deploy body read into a spec and written back as a deploy body
// (to_deploy_body, what a proxy sends to spawn a remote worker) reads back into the same spec.
#include <gtest/gtest.h>

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
    "isolateName": "c", "uri": "https://plugins.example/w.so", "sha256": ")" + std::string(64, 'a') + R"(",
    "workersPaths": ["localhost", "localhost"], "routerType": "consistentHash", "hashKey": "k",
    "rate": {"messages": 5, "perMs": 100}, "maxInFlight": 3, "credits": 16, "deliveryMode": "at-most-once",
    "subPools": {"key": "tenant", "capacity": {"a": 2}, "defaultCapacity": 1},
    "supervision": {"strategy": "escalate", "maxRestarts": 3, "withinMs": 1000, "backoffMs": 5,
                    "failedMessage": "dead-letter"},
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
  EXPECT_EQ(back["args"], (nlohmann::json{{"x", {1, 2}}}));
  EXPECT_FALSE(back.contains("id")) << "a deploy body, not a description";
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

}  // namespace
}  // namespace dde
