// Starts a real local cluster (RabbitMQ, dde-mqs, dde-registry, one dde-activator), deploys a
// consumer pool over REST, then runs dashboard_test.mjs (node + playwright-core + Debian's chromium)
// against the registry's dashboard; the script deploys producer, faulty and consumer pools of its own.
// Exit 77 (ctest SKIP) when chromium or node is absent.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cluster.hpp"

using namespace dde::test;
namespace fs = std::filesystem;

namespace {

constexpr int skip = 77;

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

/// `name` on PATH, or empty.
fs::path on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    auto colon = std::min(dirs.find(':', start), dirs.size());
    fs::path candidate = fs::path(dirs.substr(start, colon - start)) / name;
    if (executable(candidate)) return candidate;
    start = colon + 1;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dashboard_browsertest TESTS_DIR SCREENSHOT\n";
    return 2;
  }
  const fs::path tests_dir = argv[1], screenshot = argv[2];
  const fs::path chromium = std::getenv("DDE_CHROMIUM") ? std::getenv("DDE_CHROMIUM") : "/usr/bin/chromium";
  const auto node = on_path("node");
  if (!executable(chromium) || node.empty()) {
    std::cout << "SKIP: the browser test needs " << (node.empty() ? "node" : chromium.string())
              << " (deploy/install-deps.sh installs chromium and nodejs)\n";
    return skip;
  }
  if (!fs::exists(tests_dir / "node_modules" / "playwright-core")) {
    std::cerr << "playwright-core is not installed in " << tests_dir
              << ": run `npm ci` there (deploy/test.sh does)\n";
    return 1;
  }
  try {
    auto dir = fresh_dir("dashboard");
    auto mqs = start_mqs(shared_broker(), dir, 16);
    // The script stops this one to show a pool whose MQS went away.
    auto spare_mqs = start_mqs(shared_broker(), dir / "spare-mqs", 16);
    auto registry = start_registry(dir);
    const std::string node_name = "dash-node";
    auto activator = start_activator(registry, dir, node_name);
    auto id = node_id(registry, node_name);
    const std::string system = "dash" + std::to_string(::getpid());
    auto body = deploy_body(id, mqs.url(), system, "consumer", "consumer", {{"log_dir", dir.string()}},
                            {"localhost", "localhost"});
    auto deployed = rest("POST", registry.url() + "/registry/deploy", body.dump());
    if (deployed.status != 200) {
      std::cerr << "deploying the consumer pool failed: " << deployed.status << " " << deployed.body << "\n";
      return 1;
    }
    fs::create_directories(screenshot.parent_path());
    child_process test({node.string(), (tests_dir / "dashboard_test.mjs").string()}, dir / "browser.log",
                       {{"DDE_REGISTRY_URL", registry.url()},
                        {"DDE_MQS_URL", mqs.url()},
                        {"DDE_SPARE_MQS_URL", spare_mqs.url()},
                        {"DDE_SPARE_MQS_PID", std::to_string(spare_mqs.proc->pid())},
                        {"DDE_NODE_NAME", node_name},
                        {"DDE_SYSTEM", system},
                        {"DDE_PRODUCER_URI", worker_path("producer").string()},
                        {"DDE_CONSUMER_URI", worker_path("consumer").string()},
                        {"DDE_FAULTY_URI", worker_path("faulty").string()},
                        {"DDE_CHROMIUM", chromium.string()},
                        {"DDE_SCREENSHOT", screenshot.string()}});
    auto status = test.wait_exit(std::chrono::minutes(4));
    std::cout << test.log();
    if (!status) {
      std::cerr << "the browser test did not finish within 4 minutes\n";
      test.kill9();
      return 1;
    }
    int code = WIFEXITED(*status) ? WEXITSTATUS(*status) : 1;
    if (code != 0) std::cerr << "the browser test failed (exit " << code << "); logs in " << dir << "\n";
    return code;
  } catch (const std::exception& e) {
    std::cerr << "cluster setup failed: " << e.what() << "\n";
    return 1;
  }
}
