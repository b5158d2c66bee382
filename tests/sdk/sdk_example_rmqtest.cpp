// The out-of-tree example (examples/out-of-tree-worker), built against the installed SDK by
// sdk_build_example_test.sh, deployed over REST on a real cluster and asked with `ddectl ask`.
#include <gtest/gtest.h>

#include "cluster_fixture.hpp"
#include "dde/worker.hpp"

namespace dde::test {
namespace {

std::filesystem::path example_plugin(const std::string& build_dir) {
  return std::filesystem::path(DDE_SDK_TEST_DIR) / build_dir / "libecho_worker.so";
}

struct ask_result {
  std::optional<int> status;
  std::string output;
};

/// `ddectl --registry URL ask TO BODY`: its exit status and what it printed. The registry says
/// where the pool runs (its MQS).
ask_result ddectl_ask(const std::string& registry, const std::string& to, const std::string& body,
                      const std::filesystem::path& log) {
  child_process ctl(
      {bin_path("ddectl").string(), "--registry", registry, "ask", to, body, "--timeout-ms", "60000"}, log);
  auto status = ctl.wait_exit(90s);
  return {status && WIFEXITED(*status) ? std::optional<int>(WEXITSTATUS(*status)) : std::nullopt, ctl.log()};
}

TEST_F(Cluster, TheOutOfTreeExampleBuiltAgainstTheInstalledSdkAnswersAnAsk) {
  ASSERT_TRUE(std::filesystem::exists(example_plugin("example"))) << "run sdk_build_example_test first";
  auto a = node("sdk-a");
  auto id = node_id(registry, "sdk-a");
  auto sys = unique_system("sdk");
  auto body = deploy_body(id, mqs.url(), sys, "echo", "echo_v1", {{"name", "out-of-tree"}});
  body["uri"] = example_plugin("example").string();
  auto deployed = deploy(body);
  ASSERT_EQ(deployed.status, 200) << deployed.body;

  auto answer =
      ddectl_ask(registry.url(), sys + "/echo", R"({"hello": "sdk", "n": 7})", dir / "ddectl-ask.log");
  ASSERT_EQ(answer.status, 0) << answer.output;
  auto reply = nlohmann::json::parse(answer.output, nullptr, false);
  EXPECT_EQ(reply, (nlohmann::json{{"echo", {{"hello", "sdk"}, {"n", 7}}}, {"by", "out-of-tree"}}))
      << answer.output;

  auto pools = pools_of(registry, id, sys);
  ASSERT_EQ(pools.size(), 1u) << pools.dump();
  EXPECT_EQ(pools[0]["workerUri"], example_plugin("example").string());
}

TEST_F(Cluster, AWorkerBuiltForAnotherAbiVersionIsRefusedNamingBothVersions) {
  ASSERT_TRUE(std::filesystem::exists(example_plugin("example-abi"))) << "run sdk_build_example_test first";
  auto a = node("sdk-abi");
  auto id = node_id(registry, "sdk-abi");
  auto sys = unique_system("sdkabi");
  auto body = deploy_body(id, mqs.url(), sys, "echo", "echo_v1", nlohmann::json::object());
  body["uri"] = example_plugin("example-abi").string();
  auto refused = deploy(body);
  EXPECT_EQ(refused.status, 400) << refused.body;
  auto error = refused.json.value("error", std::string());
  EXPECT_NE(error.find("ABI version " + std::to_string(DDE_ABI_VERSION + 1)), std::string::npos) << error;
  EXPECT_NE(error.find("version " + std::to_string(DDE_ABI_VERSION) + ";"), std::string::npos) << error;
  EXPECT_TRUE(pools_of(registry, id, sys).empty());
}

TEST_F(Cluster, AskingAPoolNobodyServesIsAClearError) {
  auto nobody = unique_system("nobody") + "/here";
  // The registry knows no such pool: refused before any MQS is reached.
  auto unknown = ddectl_ask(registry.url(), nobody, "{}", dir / "ddectl-unknown.log");
  EXPECT_EQ(unknown.status, std::optional<int>(1)) << unknown.output;
  EXPECT_NE(unknown.output.find("no pool " + nobody + " is deployed"), std::string::npos) << unknown.output;
  // Sent anyway (--no-registry): no worker answers, and ddectl gives up after its timeout.
  child_process ctl({bin_path("ddectl").string(), "ask", nobody, "{}", "--no-registry", "--mqs", mqs.url(),
                     "--timeout-ms", "1500"},
                    dir / "ddectl-nobody.log");
  auto status = ctl.wait_exit(30s);
  ASSERT_TRUE(status && WIFEXITED(*status)) << ctl.log();
  EXPECT_EQ(WEXITSTATUS(*status), 1) << ctl.log();
  EXPECT_NE(ctl.log().find("no reply from"), std::string::npos) << ctl.log();
}

}  // namespace
}  // namespace dde::test
