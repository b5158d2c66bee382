#include "cluster.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "dde/net/http_client.hpp"

namespace dde::test {
namespace fs = std::filesystem;

std::vector<std::string> tls_settings::args() const {
  if (!enabled()) return {};
  std::vector<std::string> out{"--tls-cert", cert.string(), "--tls-key", key.string()};
  if (!ca.empty()) out.insert(out.end(), {"--tls-ca", ca.string()});
  if (verify_client) out.emplace_back("--tls-verify-client");
  return out;
}

namespace {
// DDE_TEST_MQS_LOG_LEVEL=debug (or trace) makes every test's MQS log what its dequeuer does, to
// trace a failure that needs a stressed run to show.
std::string mqs_log_level() {
  const char* level = std::getenv("DDE_TEST_MQS_LOG_LEVEL");
  return level && *level ? level : "info";
}
/// The words of environment variable `name` (split on spaces): DDE_TEST_MQS_ARGS and
/// DDE_TEST_ACTIVATOR_ARGS add options to every dde-mqs and dde-activator the tests and the benchmark
/// suite start (A/B runs, e.g. "--dequeuer-thread --threads 1", "--host-scheduling normal").
std::vector<std::string> env_args(const char* name) {
  std::vector<std::string> out;
  const char* args = std::getenv(name);
  std::istringstream words(args ? args : "");
  for (std::string w; words >> w;) out.push_back(w);
  return out;
}
}  // namespace

mqs_process start_mqs(rabbitmq_node& broker, const fs::path& dir, int prefetch, std::uint16_t port,
                      const std::map<std::string, std::string>& env, const tls_settings& tls,
                      const std::vector<std::string>& extra_args) {
  mqs_process m;
  m.port = port ? port : free_port();
  m.tls = tls.enabled();
  std::vector<std::string> argv{bin_path("dde-mqs").string(),
                                "--port",
                                std::to_string(m.port),
                                "--broker-port",
                                std::to_string(broker.port()),
                                "--prefetch",
                                std::to_string(prefetch),
                                "--log-level",
                                mqs_log_level()};
  for (auto& list : {tls.args(), env_args("DDE_TEST_MQS_ARGS"), extra_args})
    argv.insert(argv.end(), list.begin(), list.end());
  m.proc = std::make_unique<child_process>(argv, dir / ("mqs-" + std::to_string(m.port) + ".log"), env);
  if (!wait_until([&] { return port_open(m.port); }, 20s))
    throw std::runtime_error("dde-mqs did not listen on " + std::to_string(m.port) + ":\n" + m.proc->log());
  return m;
}

std::unique_ptr<child_process> start_host(const std::string& system, const std::string& mqs_url,
                                          const std::vector<nlohmann::json>& pools, const fs::path& log_file,
                                          const std::map<std::string, std::string>& env,
                                          const std::vector<std::string>& extra_args) {
  std::vector<std::string> argv{bin_path("dde-isolate-system").string(), "--name", system, "--mqs", mqs_url};
  for (auto& p : pools) {
    argv.emplace_back("--pool-json");
    argv.push_back(p.dump());
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<child_process>(argv, log_file, env);
}

registry_process start_registry(const fs::path& dir, std::uint16_t port,
                                const std::map<std::string, std::string>& env, const tls_settings& tls,
                                const std::vector<std::string>& extra_args) {
  registry_process r;
  r.port = port ? port : free_port();
  r.tls = tls.enabled();
  if (auto it = env.find("DDE_ADMIN_TOKEN"); it != env.end()) r.token = it->second;
  std::vector<std::string> argv{bin_path("dde-registry").string(), "--port", std::to_string(r.port)};
  for (auto& list : {tls.args(), extra_args}) argv.insert(argv.end(), list.begin(), list.end());
  r.proc = std::make_unique<child_process>(argv, dir / ("registry-" + std::to_string(r.port) + ".log"), env);
  // Up: active (200), or a standby of a registry pair (503 with its role).
  auto up = [&] {
    auto health = rest("GET", r.url() + "/registry/health", {}, r.token);
    return health.status == 200 ||
           (health.status == 503 && health.json.is_object() && health.json.value("role", "") == "standby");
  };
  if (!wait_until(up, 20s)) throw std::runtime_error("dde-registry did not start:\n" + r.proc->log());
  return r;
}

activator_process start_activator(const registry_process& registry, const fs::path& dir,
                                  const std::string& name, std::uint16_t port,
                                  const std::vector<std::string>& extra_args,
                                  const std::map<std::string, std::string>& extra_env,
                                  const tls_settings& tls) {
  activator_process a;
  a.port = port ? port : free_port();
  a.tls = tls.enabled();
  a.name = name;
  auto logs = dir / name;
  fs::create_directories(logs);
  std::vector<std::string> argv{bin_path("dde-activator").string(),
                                "--registry",
                                registry.ws_url(),
                                "--port",
                                std::to_string(a.port),
                                "--name",
                                name,
                                "--log-dir",
                                logs.string(),
                                "--orphan-timeout-ms",
                                "20000"};
  for (auto& list : {tls.args(), env_args("DDE_TEST_ACTIVATOR_ARGS"), extra_args})
    argv.insert(argv.end(), list.begin(), list.end());
  a.proc = std::make_unique<child_process>(argv, dir / ("activator-" + name + ".log"), extra_env);
  if (!wait_until([&] { return !node_id(registry, name).empty(); }, 20s))
    throw std::runtime_error("dde-activator " + name + " did not register:\n" + a.proc->log());
  return a;
}

rest_answer rest(const std::string& method, const std::string& url, const std::string& body,
                 const std::string& token) {
  std::map<std::string, std::string> headers;
  if (!token.empty()) headers["Authorization"] = "Bearer " + token;
  auto r = net::http_fetch(method, url, body, headers, std::chrono::seconds(30));
  rest_answer a;
  a.status = r.status;
  a.body = r.answered() ? r.body : r.error;
  a.json = nlohmann::json::parse(a.body, nullptr, false);
  if (a.json.is_discarded()) a.json = nullptr;
  return a;
}

std::string node_id(const registry_process& registry, const std::string& name) {
  auto list = rest("GET", registry.url() + "/registry/system/list", {}, registry.token);
  if (!list.json.is_array()) return {};
  for (auto& n : list.json)
    if (n.value("name", std::string()) == name) return n.value("bootstrapperId", std::string());
  return {};
}

nlohmann::json deploy_body(const std::string& node, const std::string& mqs_url, const std::string& system,
                           const std::string& isolate, const std::string& plugin, nlohmann::json args,
                           std::vector<std::string> workers_paths, const std::string& router) {
  return {{"bootstrapperId", node},
          {"action", "action.addIsolate"},
          {"messageQueuingSystemServer", mqs_url},
          {"isolateSystemName", system},
          {"isolateName", isolate},
          {"uri", worker_path(plugin).string()},
          {"workersPaths", std::move(workers_paths)},
          {"routerType", router},
          {"hotDeployment", false},
          {"args", std::move(args)}};
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

seq_report read_seq_logs(const fs::path& dir, const std::string& prefix) {
  seq_report r;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".log" || entry.path().filename().string().rfind(prefix, 0) != 0)
      continue;
    std::ifstream in(entry.path());
    std::string line;
    auto& in_file = r.per_file[entry.path().filename().string()];
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++r.lines;
      ++in_file;
      r.unique.insert(std::stoll(line));
    }
  }
  return r;
}

std::vector<echo_line> read_echo_logs(const fs::path& dir) {
  std::vector<echo_line> out;
  for (auto& [file, lines] : read_echo_logs_by_file(dir)) out.insert(out.end(), lines.begin(), lines.end());
  return out;
}

std::map<std::string, std::vector<echo_line>> read_echo_logs_by_file(const fs::path& dir) {
  std::map<std::string, std::vector<echo_line>> out;
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind("echo-", 0) != 0 || entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path());
    std::string text;
    while (std::getline(in, text)) {
      std::istringstream line(text);
      echo_line l{};
      std::string v;
      int redelivered = 0;
      if (!(line >> l.seq >> v >> l.time_us >> redelivered >> l.worker)) continue;
      l.version = std::stoi(v.substr(1));
      l.redelivered = redelivered != 0;
      out[name].push_back(std::move(l));
    }
  }
  return out;
}

std::size_t unexplained_duplicates(const std::vector<echo_line>& log) {
  std::map<std::int64_t, std::size_t> unflagged;  // per message, its handlings not flagged redelivered
  for (auto& l : log)
    if (!l.redelivered) ++unflagged[l.seq];
  std::size_t unexplained = 0;
  for (auto& [seq, n] : unflagged) unexplained += n - 1;
  return unexplained;
}

void install_file(const fs::path& source, const fs::path& target) {
  auto tmp = target;
  tmp += ".tmp";
  fs::copy_file(source, tmp, fs::copy_options::overwrite_existing);
  fs::rename(tmp, target);
}

std::size_t densest_window(std::vector<std::int64_t> times, std::int64_t window) {
  std::sort(times.begin(), times.end());
  std::size_t best = 0;
  for (std::size_t i = 0, j = 0; i < times.size(); ++i) {
    while (j < times.size() && times[j] - times[i] < window) ++j;
    best = std::max(best, j - i);
  }
  return best;
}

std::set<std::int64_t> read_api_successes(const fs::path& file) {
  std::set<std::int64_t> out;
  std::ifstream in(file);
  std::int64_t seq = 0, us = 0;
  std::string what;
  while (in >> seq >> what >> us)
    if (what == "OK") out.insert(seq);
  return out;
}

}  // namespace dde::test
