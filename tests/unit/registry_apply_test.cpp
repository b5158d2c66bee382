// POST /registry/apply without sockets: reading the body, planning against what nodes describe, and
// carrying the plan out through scripted nodes.
#include <gtest/gtest.h>

#include "apply_plan.hpp"
#include "registry_fakes.hpp"
#include "rest_api.hpp"

namespace dde::registry::test {
namespace {

const char* mqs = "ws://127.0.0.1:42043/mqs";

json deploy_body(const std::string& node, const std::string& isolate, json extra = json::object()) {
  json body = {{"bootstrapperId", node},      {"messageQueuingSystemServer", mqs},
               {"isolateSystemName", "shop"}, {"isolateName", isolate},
               {"uri", "/w/libconsumer.so"},  {"workersPaths", {"localhost"}},
               {"routerType", "roundRobin"}};
  body.update(extra);
  return body;
}

/// A pool as a node describes it: the spec's describe form and what the host adds.
json described(const json& body) {
  auto spec = dde::parse_pool_spec(nlohmann::json::parse(body.dump()));
  EXPECT_TRUE(spec) << spec.error();
  auto entry = json::parse(dde::to_json(spec.value()).dump());
  entry["messageQueuingSystemServer"] = body.value("messageQueuingSystemServer", std::string(mqs));
  entry["poolState"] = "running";
  entry["stats"] = {{"delivered", 12}, {"done", 12}};
  entry["workers"] = json::array({{{"id", "w-1"}, {"state", "running"}}});
  entry["state"] = "running";
  entry["pid"] = 4242;
  return entry;
}

std::vector<deploy_request> desired(std::vector<json> bodies) {
  json all = json::array();
  for (auto& b : bodies) all.push_back(b);
  auto parsed = parse_apply(all);
  EXPECT_TRUE(parsed) << parsed.error();
  return parsed ? parsed.value().pools : std::vector<deploy_request>{};
}

std::map<std::string, std::vector<described_pool>> running(const std::string& node, std::vector<json> pools) {
  json entries = json::array();
  for (auto& p : pools) entries.push_back(described(p));
  return pools_by_address({{node, json{{"shop", entries}}}});
}

TEST(ApplyPlan, AnEmptyClusterGetsEveryPoolCreated) {
  auto plan = plan_apply(desired({deploy_body("1", "a"), deploy_body("1", "b")}), {});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].action, apply_action::create);
  EXPECT_EQ(plan[0].pool, "shop/a");
  EXPECT_EQ(plan[0].body["action"], "action.addIsolate") << "the file may leave the thesis's action out";
  EXPECT_EQ(plan[1].pool, "shop/b");
}

TEST(ApplyPlan, APoolRunningAsTheFileSaysIsLeftAlone) {
  auto body = deploy_body("1", "a", {{"credits", 16}, {"supervision", {{"maxRestarts", 5}}}});
  auto plan = plan_apply(desired({body}), running("1", {body}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].action, apply_action::unchanged);
  EXPECT_TRUE(plan[0].changed.empty()) << plan[0].changed[0];
}

TEST(ApplyPlan, FieldsTheFileLeavesOutKeepTheirRunningValues) {
  auto runs = deploy_body("1", "a", {{"credits", 32}, {"deliveryMode", "at-most-once"}});
  auto plan = plan_apply(desired({deploy_body("1", "a")}), running("1", {runs}));
  EXPECT_EQ(plan.at(0).action, apply_action::unchanged);
}

TEST(ApplyPlan, ARateChangeIsSetWithoutRedeploying) {
  auto runs = deploy_body("1", "a", {{"rate", {{"messages", 10}, {"perMs", 1000}}}});
  auto want = deploy_body("1", "a", {{"rate", {{"messages", 50}, {"perMs", 1000}}}, {"maxInFlight", 4}});
  auto plan = plan_apply(desired({want}), running("1", {runs}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].action, apply_action::configure);
  EXPECT_EQ(plan[0].changed, (std::vector<std::string>{"rate", "maxInFlight"}));
  EXPECT_EQ(plan[0].body, (json{{"rate", {{"messages", 50}, {"perMs", 1000}}}, {"maxInFlight", 4}}));
}

TEST(ApplyPlan, AnotherRouterRedeploysThePoolKeepingWhatTheFileLeftOut) {
  auto runs = deploy_body("1", "a", {{"credits", 32}});
  auto want = deploy_body("1", "a", {{"routerType", "random"}, {"workersPaths", {"localhost", "localhost"}}});
  auto plan = plan_apply(desired({want}), running("1", {runs}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].action, apply_action::redeploy);
  EXPECT_EQ(plan[0].changed, (std::vector<std::string>{"workersPaths", "routerType"}));
  EXPECT_EQ(plan[0].body["routerType"], "random");
  EXPECT_EQ(plan[0].body["credits"], 32) << "a field the file leaves out keeps its running value";
  EXPECT_EQ(plan[0].body["bootstrapperId"], "1");
  EXPECT_EQ(plan[0].body["messageQueuingSystemServer"], mqs);
  auto again = dde::parse_pool_spec(nlohmann::json::parse(plan[0].body.dump()));
  EXPECT_TRUE(again) << "the body sent is a valid deploy body: " << again.error();
}

TEST(ApplyPlan, AnotherMqsIsADifference) {
  auto want = deploy_body("1", "a", {{"messageQueuingSystemServer", "ws://127.0.0.1:9/mqs"}});
  auto plan = plan_apply(desired({want}), running("1", {deploy_body("1", "a")}));
  EXPECT_EQ(plan.at(0).action, apply_action::redeploy);
  EXPECT_EQ(plan.at(0).changed, (std::vector<std::string>{"messageQueuingSystemServer"}));
}

TEST(ApplyPlan, APoolRunningOnAnotherNodeIsMovedThere) {
  auto plan =
      plan_apply(desired({deploy_body("2", "a")}), running("1", {deploy_body("1", "a", {{"credits", 7}})}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].action, apply_action::move);
  EXPECT_EQ(plan[0].from, "1");
  EXPECT_EQ(plan[0].node, "2");
  EXPECT_EQ(plan[0].body["bootstrapperId"], "2");
  EXPECT_EQ(plan[0].body["credits"], 7);
}

TEST(ApplyPlan, AnElasticPoolsScaledWorkersAreNotADifference) {
  json scale = {{"scale", {{"min", 1}, {"max", 4}}}};
  auto want = deploy_body("1", "a", scale);
  auto runs = described(want);
  runs["workersPaths"] = {"localhost", "localhost", "localhost"};  // scaled up from 1
  auto plan = plan_apply(desired({want}), pools_by_address({{"1", json{{"shop", json::array({runs})}}}}));
  EXPECT_EQ(plan.at(0).action, apply_action::unchanged);
}

TEST(ApplyBody, AnArrayOrAnObjectWithPoolsIsRead) {
  auto list = parse_apply(json::array({deploy_body("1", "a")}));
  ASSERT_TRUE(list) << list.error();
  EXPECT_FALSE(list.value().dry_run);
  auto object = parse_apply(json{{"pools", json::array({deploy_body("1", "a")})}, {"dryRun", true}});
  ASSERT_TRUE(object) << object.error();
  EXPECT_TRUE(object.value().dry_run);
  EXPECT_EQ(object.value().pools.at(0).spec.addr().str(), "shop/a");
}

TEST(ApplyBody, BadBodiesAreRefusedNamingTheEntryAndTheField) {
  struct bad_case {
    json body;
    std::string error;
  };
  std::vector<bad_case> cases = {
      {json::array(), "no pools to apply: the array is empty"},
      {json{{"pool", json::array()}},
       "unknown field \"pool\": an apply body is {\"pools\": [...], \"dryRun\": false}"},
      {json{{"dryRun", true}}, "missing field \"pools\", the array of deploy bodies"},
      {json{{"pools", json::array({deploy_body("1", "a")})}, {"dryRun", "yes"}},
       "field \"dryRun\" must be true or false"},
      {json{{"pools", 3}}, "the pools to apply must be an array of deploy bodies (or {\"pools\": [...]})"},
      {json::array({deploy_body("1", "a"), deploy_body("1", "a")}),
       "pools[1]: pool shop/a is already pools[0]; a pool is applied once"},
      {json::array({deploy_body("1", "a"), deploy_body("1", "b", {{"routertype", "random"}})}),
       "pools[1]: unknown field \"routertype\" (did you mean \"routerType\"?)"},
  };
  for (auto& c : cases) {
    auto r = parse_apply(c.body);
    ASSERT_FALSE(r) << c.body.dump();
    EXPECT_EQ(r.error().rfind(c.error, 0), 0u) << r.error();
  }
}

class RegistryApply : public ::testing::Test {
 protected:
  void apply(const json& body) {
    api.handle({"POST", "/registry/apply", body.dump(), "127.0.0.1:1"}, [this](rest_reply r) { last = r; });
  }
  /// Answers the describe request `n` just got with `pools` (in isolate system "shop").
  void describe(scripted_node& n, std::vector<json> pools) {
    ASSERT_EQ(n.last()["action"], "describe");
    json entries = json::array();
    for (auto& p : pools) entries.push_back(described(p));
    n.ok(id(n), pools.empty() ? json::object() : json{{"shop", entries}});
  }
  std::uint64_t id(scripted_node& n) { return n.last()["id"].get<std::uint64_t>(); }

  node_table table{node_table::options{}};
  rest_api api{table};
  std::optional<rest_reply> last;
  scripted_node a{table, 1, "266393094", "node-a"};
  scripted_node b{table, 2, "12133208", "node-b"};
};

TEST_F(RegistryApply, EachPoolIsAppliedInTurnAndTheAnswerSaysWhatHappened) {
  apply(json::array({deploy_body("node-a", "new"), deploy_body("266393094", "same"),
                     deploy_body("node-a", "faster", {{"rate", {{"messages", 9}, {"perMs", 1000}}}})}));
  describe(a, {deploy_body("266393094", "same"), deploy_body("266393094", "faster")});
  describe(b, {});
  auto deploy = a.last();
  EXPECT_EQ(deploy["action"], "deploy");
  EXPECT_EQ(deploy["body"]["isolateName"], "new");
  EXPECT_EQ(deploy["body"]["bootstrapperId"], "266393094") << "a node named by name is sent its id";
  a.ok(id(a), {{"isolateSystemName", "shop"}, {"isolateName", "new"}});
  auto rate = a.last();
  EXPECT_EQ(rate["action"], "setRate") << "\"same\" needed nothing";
  EXPECT_EQ(rate["rate"], (json{{"messages", 9}, {"perMs", 1000}}));
  EXPECT_FALSE(rate.contains("maxInFlight")) << "what the file does not give is left as it is";
  EXPECT_FALSE(last);
  a.ok(id(a), json::object());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  ASSERT_EQ(last->body["pools"].size(), 3u);
  EXPECT_EQ(last->body["pools"][0]["action"], "create");
  EXPECT_EQ(last->body["pools"][1]["action"], "unchanged");
  EXPECT_EQ(last->body["pools"][2]["action"], "configure");
  EXPECT_EQ(last->body["pools"][2]["result"], "ok");
  EXPECT_EQ(last->body["summary"], (json{{"configure", 1}, {"create", 1}, {"unchanged", 1}}));
  EXPECT_EQ(b.link->requests().size(), 1u) << "node b was only described";
}

TEST_F(RegistryApply, AFailedStepDoesNotStopTheOthersAndItsStatusIsTheAnswers) {
  apply(json::array(
      {deploy_body("node-a", "broken", {{"uri", "/w/missing.so"}}), deploy_body("node-b", "fine")}));
  describe(a, {});
  describe(b, {});
  a.fail(id(a), 400, "plugin /w/missing.so does not exist");
  EXPECT_EQ(b.last()["action"], "deploy");
  b.ok(id(b), json::object());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 400);
  EXPECT_EQ(last->body["error"],
            "1 of 2 pools could not be applied; shop/broken: plugin /w/missing.so does not exist");
  EXPECT_EQ(last->body["pools"][0]["result"], "failed");
  EXPECT_EQ(last->body["pools"][1]["result"], "ok");
}

TEST_F(RegistryApply, ARedeployAndAMoveAreSentAsSuch) {
  apply(json::array(
      {deploy_body("node-a", "router", {{"routerType", "random"}}), deploy_body("node-b", "moving")}));
  describe(a, {deploy_body("266393094", "router"), deploy_body("266393094", "moving")});
  describe(b, {});
  EXPECT_EQ(a.last()["action"], "redeploy");
  EXPECT_EQ(a.last()["body"]["routerType"], "random");
  a.ok(id(a), json::object());
  EXPECT_EQ(b.last()["action"], "deploy");
  EXPECT_EQ(b.last()["body"]["isolateName"], "moving");
  b.ok(id(b), json::object());
  EXPECT_EQ(a.last()["action"], "shutdown") << "shut down where it ran once it runs on the new node";
  EXPECT_EQ(a.last()["isolateName"], "moving");
  a.ok(id(a), json::object());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  EXPECT_EQ(last->body["pools"][1]["action"], "move");
  EXPECT_EQ(last->body["pools"][1]["from"], "266393094");
}

TEST_F(RegistryApply, ADryRunOnlyDescribes) {
  apply(json{{"pools", json::array({deploy_body("node-a", "new")})}, {"dryRun", true}});
  describe(a, {});
  describe(b, {});
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 200);
  EXPECT_EQ(last->body["pools"][0]["result"], "planned");
  EXPECT_EQ(a.link->requests().size(), 1u);
}

TEST_F(RegistryApply, AnUnknownNodeOrAnUndescribableOneAppliesNothing) {
  apply(json::array({deploy_body("node-a", "x"), deploy_body("node-z", "y")}));
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 404);
  EXPECT_NE(last->body["error"].get<std::string>().find("unknown bootstrapperId \"node-z\""),
            std::string::npos);
  EXPECT_TRUE(a.link->requests().empty());

  last.reset();
  apply(json::array({deploy_body("node-a", "x")}));
  describe(a, {});
  b.fail(id(b), 504, "node 12133208 did not answer \"describe\" within 15000 ms");
  ASSERT_TRUE(last);
  EXPECT_EQ(last->status, 504);
  EXPECT_EQ(last->body["error"],
            "cannot describe node 12133208: node 12133208 did not answer \"describe\" within 15000 ms; "
            "nothing was applied");
  EXPECT_EQ(a.link->requests().size(), 1u) << "the second apply's describe, no deploy";
}

}  // namespace
}  // namespace dde::registry::test
