// Nodes coming and going at a real dde-registry process: disconnects (502), silence (504),
// re-registration under the previous id, and refused registrations.
#include <gtest/gtest.h>

#include <future>

#include "registry_test_process.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;
using dde::test::wait_until;

TEST(RegistryNodes, ANodeThatDisconnectsLeavesTheListAndItsRequestInFlightGets502) {
  registry_process registry;
  auto opts = named("quiet");
  opts.answer = false;
  fake_node node(registry.port(), opts);
  ASSERT_TRUE(node.wait_registered());
  auto id = node.id();
  auto pending = std::async(std::launch::async, [&] { return registry.get("/registry/system/" + id); });
  ASSERT_TRUE(node.wait_requests(1)) << registry.log();
  node.disconnect();
  auto r = pending.get();
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(error_of(r), "node " + id + " disconnected");
  EXPECT_EQ(registry.get("/registry/system/list").body, json::array());
  EXPECT_EQ(registry.get("/registry/system/" + id).status, 404);
  EXPECT_NE(registry.log().find("node " + id + " disconnected"), std::string::npos);
}

TEST(RegistryNodes, ANodeThatNeverAnswersGets504AndStaysListed) {
  registry_process registry({"--request-timeout-ms", "300"});
  auto opts = named("silent");
  opts.answer = false;
  fake_node node(registry.port(), opts);
  ASSERT_TRUE(node.wait_registered());
  auto r = registry.get("/registry/system/" + node.id());
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(error_of(r), "node " + node.id() + " did not answer \"describe\" within 300 ms");
  auto deploy = registry.post("/registry/deploy", thesis_deploy_body(node.id()));
  EXPECT_EQ(deploy.status, 504);
  EXPECT_EQ(registry.get("/registry/system/list").body.size(), 1u);
  EXPECT_EQ(registry.get("/registry/health").status, 200);
}

TEST(RegistryNodes, ANodeRegisteringAgainWithItsPreviousIdKeepsIt) {
  registry_process registry;
  std::string id;
  {
    fake_node first(registry.port(), named("node-a"));
    ASSERT_TRUE(first.wait_registered());
    id = first.id();
    // While it is connected, its id is not given to anyone else.
    auto rival_opts = named("rival");
    rival_opts.previous_id = id;
    fake_node rival(registry.port(), rival_opts);
    ASSERT_TRUE(rival.wait_registered());
    EXPECT_NE(rival.id(), id);
  }
  ASSERT_TRUE(wait_until([&] { return registry.get("/registry/system/list").body.empty(); }, 10s));
  auto opts = named("node-a");
  opts.previous_id = id;
  fake_node again(registry.port(), opts);
  ASSERT_TRUE(again.wait_registered());
  EXPECT_EQ(again.id(), id);
  EXPECT_EQ(registry.get("/registry/system/list").body[0]["bootstrapperId"], id);
}

TEST(RegistryNodes, ABadRegistrationIsRefusedWithAnErrorFrameAndTheRegistryKeepsServing) {
  registry_process registry;
  auto opts = named("old");
  opts.register_on_connect = false;
  fake_node node(registry.port(), opts);
  ASSERT_TRUE(node.wait_open());
  node.send_text(R"({"type": "register", "protocol": 99, "port": 42042})");
  ASSERT_TRUE(node.wait_closed());
  ASSERT_EQ(node.errors().size(), 1u);
  EXPECT_EQ(node.errors()[0]["error"],
            "protocol version 99 is not supported; this registry speaks version 1");
  EXPECT_EQ(registry.get("/registry/system/list").body, json::array());
  fake_node good(registry.port(), named("new"));
  EXPECT_TRUE(good.wait_registered());
}

}  // namespace
}  // namespace dde::registry::test
