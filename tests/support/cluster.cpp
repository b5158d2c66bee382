#include "cluster.hpp"

#include <fstream>

namespace dde::test {
namespace fs = std::filesystem;

mqs_process start_mqs(rabbitmq_node& broker, const fs::path& dir, int prefetch, std::uint16_t port) {
  mqs_process m;
  m.port = port ? port : free_port();
  m.proc = std::make_unique<child_process>(
      std::vector<std::string>{bin_path("dde-mqs").string(), "--port", std::to_string(m.port), "--broker-port",
                               std::to_string(broker.port()), "--prefetch", std::to_string(prefetch),
                               "--log-level", "info"},
      dir / ("mqs-" + std::to_string(m.port) + ".log"));
  if (!wait_until([&] { return port_open(m.port); }, 20s))
    throw std::runtime_error("dde-mqs did not listen on " + std::to_string(m.port) + ":\n" + m.proc->log());
  return m;
}

std::unique_ptr<child_process> start_host(const std::string& system, const std::string& mqs_url,
                                          const std::vector<nlohmann::json>& pools, const fs::path& log_file) {
  std::vector<std::string> argv{bin_path("dde-isolate-system").string(), "--name", system, "--mqs", mqs_url};
  for (auto& p : pools) {
    argv.push_back("--pool-json");
    argv.push_back(p.dump());
  }
  return std::make_unique<child_process>(argv, log_file);
}

nlohmann::json pool(const std::string& system, const std::string& isolate, const std::string& plugin,
                    nlohmann::json args, int workers, const std::string& mode) {
  return {{"isolateSystemName", system},
          {"isolateName", isolate},
          {"uri", worker_path(plugin).string()},
          {"workersPaths", std::vector<std::string>(std::size_t(workers), "localhost")},
          {"routerType", "roundRobin"},
          {"hotDeployment", false},
          {"deliveryMode", mode},
          {"args", std::move(args)}};
}

std::vector<nlohmann::json> all_stats(const fs::path& dir, const std::string& prefix) {
  std::vector<nlohmann::json> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json sum_stats(const fs::path& dir, const std::string& prefix) {
  nlohmann::json total = nlohmann::json::object();
  for (auto& j : all_stats(dir, prefix))
    for (auto& [k, v] : j.items())
      if (v.is_number_integer()) total[k] = total.value(k, std::int64_t(0)) + v.get<std::int64_t>();
  return total;
}

std::vector<std::int64_t> seq_report::missing(std::int64_t n) const {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i)
    if (!unique.count(i)) out.push_back(i);
  return out;
}

seq_report read_seq_logs(const fs::path& dir) {
  seq_report r;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".log" || entry.path().filename().string().rfind("consumer-", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++r.lines;
      r.unique.insert(std::stoll(line));
    }
  }
  return r;
}

}  // namespace dde::test
