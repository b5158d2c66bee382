#pragma once
// The fixture of the cluster tests: a dde-mqs on the shared broker and a dde-registry per test, plus
// helpers to start nodes and read what the registry reports.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "cluster.hpp"

namespace dde::test {

constexpr auto long_wait = 180s;

/// Names unique to this test process, so tests sharing a broker never share a queue.
inline std::string unique_system(const std::string& base) { return base + std::to_string(::getpid()); }
/// A name unique to this test as well ("<base><pid>_<n>"): a test that fails leaves no queue the next reads.
inline std::string unique_test_system(const std::string& base) {
  static int tests = 0;
  return unique_system(base) + "_" + std::to_string(++tests);
}

/// The pools of `system` on node `id`, as GET /registry/system/{id} reports them.
inline nlohmann::json pools_of(const registry_process& registry, const std::string& id,
                               const std::string& system) {
  auto show = rest("GET", registry.url() + "/registry/system/" + id, {}, registry.token);
  if (show.status != 200 || !show.json.is_object() || !show.json.contains(system))
    return nlohmann::json::array();
  return show.json[system];
}

inline bool pid_running(int pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

class Cluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    mqs = start_mqs(shared_broker(), dir, 16);
    registry = start_registry(dir);
  }
  activator_process node(const std::string& name) { return start_activator(registry, dir, name); }
  rest_answer deploy(const nlohmann::json& body) {
    return rest("POST", registry.url() + "/registry/deploy", body.dump(), registry.token);
  }
  /// Deploys `plugin` as `sys/isolate` on node `node_id` with `workers` local workers, `args` (plus
  /// `log_dir`: the test's directory) and `extra` deploy fields.
  rest_answer deploy_pool(const std::string& node_id, const std::string& sys, const std::string& isolate,
                          const std::string& plugin, nlohmann::json args, int workers,
                          const nlohmann::json& extra = nlohmann::json::object()) {
    args["log_dir"] = dir;
    auto body = deploy_body(node_id, mqs.url(), sys, isolate, plugin, args,
                            std::vector<std::string>(std::size_t(workers), "localhost"));
    body.update(extra);
    return deploy(body);
  }

  std::filesystem::path dir;
  mqs_process mqs;
  registry_process registry;
};

}  // namespace dde::test
