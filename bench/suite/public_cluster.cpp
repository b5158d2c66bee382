#include "public_cluster.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dde::bench {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {
/// The node deploy/cluster.sh names its activator.
constexpr const char* node_name = "node-a";
}  // namespace

public_cluster::public_cluster(fs::path dir, int prefetch)
    : dir_(std::move(dir)),
      prefetch_(prefetch),
      registry_port_(test::free_port()),
      mqs_port_(test::free_port()),
      activator_port_(test::free_port()),
      rabbitmq_port_(test::free_port()),
      probe_(rabbitmq_port_) {
  std::string output;
  if (!script("up", output)) {
    std::string ignored;
    script("down", ignored);
    throw std::runtime_error("deploy/cluster.sh up failed:\n" + output);
  }
}

public_cluster::~public_cluster() {
  std::string output;
  script("down", output);
}

bool public_cluster::script(const std::string& command, std::string& output) const {
  const std::vector<std::string> argv{"/bin/bash",
                                      std::string(DDE_SOURCE_DIR) + "/deploy/cluster.sh",
                                      command,
                                      "--dir",
                                      dir_.string(),
                                      "--prefetch",
                                      std::to_string(prefetch_),
                                      "--registry-port",
                                      std::to_string(registry_port_),
                                      "--mqs-port",
                                      std::to_string(mqs_port_),
                                      "--activator-port",
                                      std::to_string(activator_port_),
                                      "--rabbitmq-port",
                                      std::to_string(rabbitmq_port_)};
  fs::create_directories(dir_);
  test::child_process proc(argv, dir_ / ("cluster-" + command + ".log"),
                           {{"DDE_BUILD_DIR", fs::path(DDE_BIN_DIR).parent_path().string()}});
  // A RabbitMQ node boots in 5-15 s, and over a minute beside other work on a loaded machine.
  const auto status = proc.wait_exit(300s);
  output = proc.log();
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
}

std::string public_cluster::mqs_url(int prefetch, int index) {
  if (prefetch != prefetch_ || index != 0)
    throw std::runtime_error("the public-path cluster has one MQS, with prefetch " +
                             std::to_string(prefetch_));
  return "ws://127.0.0.1:" + std::to_string(mqs_port_) + "/mqs";
}

std::string public_cluster::ddectl(std::vector<std::string> args) const {
  args.insert(args.begin(), {"--registry", "http://127.0.0.1:" + std::to_string(registry_port_)});
  auto r = test::run_tool("ddectl", args);
  if (r.exit != 0) {
    std::string line;
    for (auto& a : args) line += " " + a;
    throw std::runtime_error("ddectl" + line + " failed (" + std::to_string(r.exit) + "): " + r.err + r.out);
  }
  return r.out;
}

void public_cluster::deploy(int, const std::string& mqs_url, const pool_request& p) {
  std::string workers;
  for (int i = 0; i < p.workers; ++i) workers += (i ? ",localhost" : "localhost");
  ddectl({"deploy", "--bootstrapper", node_name, "--mqs", mqs_url, "--system", p.system, "--isolate",
          p.isolate, "--uri", test::worker_path(p.plugin).string(), "--workers", workers, "--delivery-mode",
          p.mode, "--credits", std::to_string(p.credits), "--args", p.args.dump()});
}

void public_cluster::shutdown(int, const std::string& system) { ddectl({"shutdown", node_name, system}); }

nlohmann::json public_cluster::describe(int) {
  try {
    return nlohmann::json::parse(ddectl({"-o", "json", "show", node_name}));
  } catch (const std::exception&) {
    return nlohmann::json();  // a stalled point's report goes on without it
  }
}

int public_cluster::broker_pid() {
  std::ifstream in(dir_ / "rabbitmq" / "server.pid");
  int pid = -1;
  in >> pid;
  return pid;
}

}  // namespace dde::bench
