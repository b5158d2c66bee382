#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dde/protocol/pool_spec.hpp"
#include "dde/runtime/load_failures.hpp"
#include "dde/runtime/plugin_loader.hpp"

namespace {

std::string plugin(const std::string& name) { return std::string(DDE_WORKER_DIR) + "/lib" + name + ".so"; }

class null_context : public dde::worker_context {
 public:
  nlohmann::json args_ = {{"to", "s/c"}};
  std::string self_ = "s/p", id_ = "w";
  const nlohmann::json& args() const override { return args_; }
  const std::string& self() const override { return self_; }
  const std::string& worker_id() const override { return id_; }
  void send(nlohmann::json, std::string, bool, std::string_view, std::string_view) override {}
  void ask(nlohmann::json, std::string_view) override {}
  void reply(const dde::message&, nlohmann::json) override {}
  void done() override {}
  void backoff(std::chrono::milliseconds, std::string_view) override {}
  void when_writable(std::function<void()>) override {}
  void after(std::chrono::milliseconds, std::function<void()>) override {}
  void log(int, std::string_view) override {}
  void forward(const dde::message&, std::string_view) override {}
  void send_after(std::chrono::milliseconds, nlohmann::json, std::string_view) override {}
};

TEST(PluginLoader, LoadsAWorkerAndCreatesInstances) {
  auto p = dde::runtime::worker_plugin::load(plugin("supplier"));
  ASSERT_TRUE(p) << p.error();
  null_context ctx;
  auto w = p.value()->create(&ctx);
  ASSERT_TRUE(w) << w.error();
  EXPECT_NE(w.value().get(), nullptr);
  EXPECT_EQ(p.value()->object().md5().size(), 32u);
}

TEST(PluginLoader, RefusesAMissingFile) {
  auto p = dde::runtime::worker_plugin::load("/nonexistent/libnothing.so");
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("does not exist"), std::string::npos) << p.error();
  EXPECT_EQ(p.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::missing);
}

TEST(PluginLoader, RefusesAFileThatIsNotAnElfObject) {
  auto path = (std::filesystem::temp_directory_path() / ("dde-not-elf-" + std::to_string(::getpid()) + ".so"))
                  .string();
  std::ofstream(path) << "#!/bin/sh\necho hello\n";
  auto p = dde::runtime::worker_plugin::load(path);
  std::filesystem::remove(path);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("not an ELF shared object"), std::string::npos) << p.error();
  EXPECT_EQ(p.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::not_elf);
}

TEST(PluginLoader, RefusesASharedObjectWithoutEntryPoints) {
  auto p = dde::runtime::worker_plugin::load(plugin("test_no_factory"));
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("DDE_WORKER"), std::string::npos) << p.error();
  EXPECT_EQ(p.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::entry_points);
}

TEST(PluginLoader, RefusesAnotherAbiVersionNamingBoth) {
  auto p = dde::runtime::worker_plugin::load(plugin("test_bad_abi"));
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().find("version 999"), std::string::npos) << p.error();
  EXPECT_NE(p.error().find("version " + std::to_string(DDE_ABI_VERSION)), std::string::npos) << p.error();
  EXPECT_EQ(p.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::abi);
}

TEST(PluginLoader, ReportsAThrowingConstructorWithItsMessage) {
  auto p = dde::runtime::worker_plugin::load(plugin("test_throwing_ctor"));
  ASSERT_TRUE(p) << p.error();
  null_context ctx;
  auto w = p.value()->create(&ctx);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().find("cannot reach the database"), std::string::npos) << w.error();
  EXPECT_EQ(w.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::constructor);
}

TEST(PluginLoader, LoadsTheSamePathTwiceAsIndependentCopies) {
  auto a = dde::runtime::worker_plugin::load(plugin("supplier"));
  auto b = dde::runtime::worker_plugin::load(plugin("supplier"));
  ASSERT_TRUE(a && b);
  auto fa = a.value()->object().symbol("dde_create_worker");
  auto fb = b.value()->object().symbol("dde_create_worker");
  EXPECT_NE(fa, fb);  // two mappings: a hot swap would really load new code
}

TEST(PluginLoader, LoadsLeaveNothingInTheTemporaryDirectory) {
  // A dde-plugins-<pid> directory kept by each process would leave one more in /tmp per isolate
  // system ever started (9,407 after a few days of tests).
  const auto system_tmp = std::filesystem::temp_directory_path();
  auto tmp = system_tmp / ("dde-plugin-tmp-" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  const char* before = std::getenv("TMPDIR");
  std::string saved = before ? before : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  {
    auto a = dde::runtime::worker_plugin::load(plugin("supplier"));
    auto refused = dde::runtime::worker_plugin::load(plugin("supplier"), std::string(64, '0'));
    auto b = dde::runtime::worker_plugin::load(plugin("test_no_factory"));
    ASSERT_TRUE(a) << a.error();
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::checksum);
    ASSERT_FALSE(b);
    null_context ctx;
    EXPECT_TRUE(a.value()->create(&ctx)) << "the loaded copy works without its file";
  }
  if (before)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << std::filesystem::directory_iterator(tmp)->path();
  std::filesystem::remove_all(tmp);
  // (The old directory's name, made once a process whatever TMPDIR said later.)
  EXPECT_FALSE(std::filesystem::exists(system_tmp / ("dde-plugins-" + std::to_string(::getpid()))));
}

TEST(PluginLoader, LoadsACustomRouter) {
  auto r = dde::runtime::router_plugin::load(plugin("test_pick_last"));
  ASSERT_TRUE(r) << r.error();
  auto policy = r.value()->create();
  ASSERT_TRUE(policy);
  std::vector<dde::worker_info> workers(3);
  EXPECT_EQ(policy.value()->select_worker(dde::message{}, workers), std::vector<std::size_t>{2});
  auto not_router = dde::runtime::router_plugin::load(plugin("supplier"));
  ASSERT_FALSE(not_router);
  EXPECT_EQ(not_router.code<dde::runtime::plugin_failure>(), dde::runtime::plugin_failure::entry_points);
}

TEST(PluginLoader, FailureReasonsHaveTheMetricsLabelsAndPassThroughOtherResults) {
  using dde::runtime::plugin_failure;
  const std::pair<plugin_failure, std::string_view> labels[] = {
      {plugin_failure::missing, "missing"},   {plugin_failure::not_elf, "not_elf"},
      {plugin_failure::dlopen, "dlopen"},     {plugin_failure::entry_points, "entry_points"},
      {plugin_failure::abi, "abi"},           {plugin_failure::constructor, "constructor"},
      {plugin_failure::fetch, "fetch"},       {plugin_failure::crashed, "crashed"},
      {plugin_failure::checksum, "checksum"}, {plugin_failure::not_allowed, "not_allowed"},
      {plugin_failure::other, "other"}};
  for (auto [reason, label] : labels) EXPECT_EQ(dde::runtime::to_string(reason), label);
  auto failed = dde::result<int>::failure("no", plugin_failure::abi);
  auto passed = dde::result<bool>::failure_of(failed, [](const std::string& e) { return e + "!"; });
  EXPECT_EQ(passed.error(), "no!");
  EXPECT_EQ(passed.code<plugin_failure>(), plugin_failure::abi);
  EXPECT_EQ(dde::result<bool>::failure("plain").code<plugin_failure>(), plugin_failure::other);
}

TEST(PoolSpec, ReadsTheThesisDeployBody) {
  auto body = nlohmann::json::parse(R"({
    "bootstrapperId": "266393094", "action": "action.addIsolate",
    "messageQueuingSystemServer": "ws://127.0.0.1:42043/mqs",
    "isolateSystemName": "sampleSystem", "isolateName": "consumer",
    "uri": "file:///opt/dde/libconsumer.so", "workersPaths": ["localhost", "localhost"],
    "routerType": "random", "hotDeployment": false, "args": {"x": 1}})");
  auto spec = dde::parse_pool_spec(body);
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec.value().addr().str(), "sampleSystem/consumer");
  EXPECT_EQ(spec.value().plugin_path(), "/opt/dde/libconsumer.so");
  EXPECT_EQ(spec.value().workers_paths.size(), 2u);
  EXPECT_EQ(spec.value().router, dde::router_kind::random);
  EXPECT_EQ(spec.value().mode, dde::delivery_mode::at_least_once);
  auto j = dde::to_json(spec.value());
  EXPECT_EQ(j["id"], "sampleSystem/consumer");
  EXPECT_EQ(j["workersCount"], 2);
  EXPECT_EQ(j["routerType"], "random");
  EXPECT_EQ(j["hotDeployment"], false);
}

TEST(PoolSpec, SaysExactlyWhatIsWrong) {
  auto base = nlohmann::json{{"isolateSystemName", "s"}, {"isolateName", "c"}, {"uri", "/x.so"}};
  auto error_for = [&](nlohmann::json patch) {
    auto body = base;
    body.merge_patch(patch);
    auto spec = dde::parse_pool_spec(body);
    return spec ? std::string("accepted") : spec.error();
  };
  EXPECT_EQ(error_for(nlohmann::json::object()), "accepted");
  EXPECT_NE(error_for({{"isolateName", nullptr}}).find("missing field \"isolateName\""), std::string::npos);
  EXPECT_NE(error_for({{"isolateName", "../x"}}).find("names must be"), std::string::npos);
  EXPECT_NE(error_for({{"routerType", "fastest"}}).find("unknown routerType \"fastest\""), std::string::npos);
  EXPECT_NE(error_for({{"workersPaths", nlohmann::json::array()}}).find("non-empty array"),
            std::string::npos);
  EXPECT_NE(error_for({{"deliveryMode", "exactly-once"}}).find("deliveryMode"), std::string::npos);
  EXPECT_NE(error_for({{"credits", 0}}).find("credits"), std::string::npos);
  EXPECT_NE(error_for({{"hotDeployment", "yes"}}).find("hotDeployment"), std::string::npos);
  EXPECT_NE(error_for({{"uri", 5}}).find("uri"), std::string::npos);
  EXPECT_EQ(error_for({{"uri", "http://127.0.0.1:8080/plugins/libecho.so"}}), "accepted");
  EXPECT_EQ(error_for({{"uri", "https://plugins.example/libecho.so"}}), "accepted");
  EXPECT_EQ(error_for({{"uri", "https://:0/x.so"}}),
            "field \"uri\" is \"https://:0/x.so\", not a valid http:// or https:// URL");
  EXPECT_NE(error_for({{"uri", "http://h/x.so"}, {"workersPaths", {"ws://127.0.0.1:42042/activator"}}})
                .find("runs on \"localhost\" workers only"),
            std::string::npos);
  EXPECT_NE(dde::parse_pool_spec(nlohmann::json::array()).error().find("JSON object"), std::string::npos);
  EXPECT_NE(error_for({{"routerType", "consistentHash"}}).find("needs \"hashKey\""), std::string::npos);
  EXPECT_EQ(error_for({{"routerType", "consistentHash"}, {"hashKey", "user"}}), "accepted");
  EXPECT_EQ(error_for({{"routerType", "smallestMailbox"}}), "accepted");
  EXPECT_NE(error_for({{"backoff", {{"retryLimit", -1}}}}).find("backoff.retryLimit"), std::string::npos);
  EXPECT_NE(error_for({{"backoff", {{"maxDelayMs", 0}}}}).find("backoff.maxDelayMs"), std::string::npos);
  EXPECT_NE(error_for({{"subPools", {{"capacity", {{"a", 1}}}}}}).find("\"key\""), std::string::npos);
  EXPECT_NE(
      error_for({{"subPools", {{"key", "k"}, {"capacity", {{"a", 0}}}}}}).find("subPools.capacity[\"a\"]"),
      std::string::npos);
}

TEST(PoolSpec, RetryDelaysAreReadCheckedAndRoundTrip) {
  auto base = nlohmann::json{{"isolateSystemName", "s"}, {"isolateName", "c"}, {"uri", "/x.so"}};
  auto with = [&](nlohmann::json patch) {
    auto body = base;
    body.merge_patch(patch);
    return dde::parse_pool_spec(body);
  };
  auto spec = with({{"retry", {{"delays", {1000, 5000, 30000}}}}});
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec.value().retry.delays, (std::vector<std::chrono::milliseconds>{
                                           std::chrono::milliseconds(1000), std::chrono::milliseconds(5000),
                                           std::chrono::milliseconds(30000)}));
  auto j = dde::to_json(spec.value());
  EXPECT_EQ(j["retry"], (nlohmann::json{{"delays", {1000, 5000, 30000}}}));
  j.update({{"isolateSystemName", "s"}, {"isolateName", "c"}, {"uri", "/x.so"}});
  auto again = dde::parse_pool_spec(j);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again.value().retry.delays, spec.value().retry.delays);
  EXPECT_TRUE(dde::to_json(dde::parse_pool_spec(base).value())["retry"].is_null()) << "none unless given";
  const std::string shape =
      "field \"retry\" must be {\"delays\": [ms, ...]}: 1 to 10 delays, each an integer from 1 to 86400000 "
      "(milliseconds)";
  for (auto bad :
       {nlohmann::json(1000), nlohmann::json::object(), nlohmann::json{{"delays", nlohmann::json::array()}},
        nlohmann::json{{"delays", {0}}}, nlohmann::json{{"delays", {"1s"}}},
        nlohmann::json{{"delays", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}}})
    EXPECT_EQ(with({{"retry", bad}}).error(), shape) << bad.dump();
  EXPECT_NE(with({{"retry", {{"delays", {10}}}}, {"deliveryMode", "at-most-once"}})
                .error()
                .find("needs deliveryMode at-least-once"),
            std::string::npos);
  EXPECT_NE(with({{"retry", {{"delays", {10}}}}, {"supervision", {{"failedMessage", "dead-letter"}}}})
                .error()
                .find("contradict each other"),
            std::string::npos);
}

TEST(PoolSpec, GovernanceFieldsRoundTrip) {
  auto body = nlohmann::json::parse(R"({"isolateSystemName": "s", "isolateName": "c", "uri": "/x.so",
    "backoff": {"retryLimit": 3, "maxDelayMs": 60000},
    "subPools": {"key": "service", "capacity": {"write": 1}, "defaultCapacity": 4}})");
  auto spec = dde::parse_pool_spec(body);
  ASSERT_TRUE(spec) << spec.error();
  EXPECT_EQ(spec.value().backoff.retry_limit, 3);
  EXPECT_EQ(spec.value().sub_pools.capacity.at("write"), 1u);
  auto j = dde::to_json(spec.value());
  j.update({{"isolateSystemName", "s"}, {"isolateName", "c"}, {"uri", "/x.so"}});
  auto again = dde::parse_pool_spec(j);
  ASSERT_TRUE(again) << again.error();
  EXPECT_EQ(again.value().backoff.retry_limit, 3);
  EXPECT_EQ(again.value().backoff.max_delay, std::chrono::milliseconds(60000));
  EXPECT_EQ(again.value().sub_pools.key, "service");
  EXPECT_EQ(again.value().sub_pools.capacity, spec.value().sub_pools.capacity);
  EXPECT_EQ(again.value().sub_pools.default_capacity, 4u);
}

}  // namespace
