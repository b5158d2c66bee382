#include "bench_cluster.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "steady_rate.hpp"

namespace dde::bench {
namespace fs = std::filesystem;
using namespace test;

bench_cluster::bench_cluster(fs::path dir, int nodes)
    : dir_(std::move(dir)), broker_("bench"), probe_(broker_.port()) {
  broker_.start();
  // No failure detection: a node that misses heartbeats on a loaded machine would be declared lost
  // and its id refused mid-run; the suite measures throughput, not failover.
  registry_ = start_registry(dir_, 0, {}, {}, {"--heartbeat-ms", "0"});
  for (int i = 0; i < nodes; ++i) {
    auto name = "bench-node-" + std::to_string(i);
    activators_.push_back(start_activator(registry_, dir_, name));
    node_ids_.push_back(node_id(registry_, name));
  }
}

bench_cluster::~bench_cluster() {
  activators_.clear();  // SIGTERM: each stops its isolate systems
  for (auto& [key, m] : mqs_) m.proc->stop();
  registry_.proc->stop();
  broker_.stop();
}

std::string bench_cluster::mqs_url(int prefetch, int index) {
  auto key = std::make_pair(prefetch, index);
  auto it = mqs_.find(key);
  if (it == mqs_.end()) it = mqs_.emplace(key, start_mqs(broker_, dir_, prefetch)).first;
  return it->second.url();
}

std::map<std::pair<int, int>, mqs_process>::iterator bench_cluster::find_mqs(const std::string& url) {
  for (auto it = mqs_.begin(); it != mqs_.end(); ++it)
    if (it->second.url() == url) return it;
  throw std::runtime_error("no MQS of this cluster at " + url);
}

std::uint16_t bench_cluster::mqs_port(const std::string& url) { return find_mqs(url)->second.port; }

void bench_cluster::kill_mqs(const std::string& url) { find_mqs(url)->second.proc->kill9(); }

void bench_cluster::restart_mqs(const std::string& url) {
  auto it = find_mqs(url);
  auto port = it->second.port;
  it->second.proc.reset();
  it->second = start_mqs(broker_, dir_, it->first.first, port);
}

void bench_cluster::deploy(int node, const std::string& mqs_url, const pool_request& p) {
  auto body = deploy_body(node_ids_.at(std::size_t(node)), mqs_url, p.system, p.isolate, p.plugin, p.args,
                          std::vector<std::string>(std::size_t(p.workers), "localhost"));
  body["deliveryMode"] = p.mode;
  body["credits"] = p.credits;
  auto r = rest("POST", registry_.url() + "/registry/deploy", body.dump());
  if (r.status != 200)
    throw std::runtime_error("deploy of " + p.system + "/" + p.isolate +
                             " failed: " + std::to_string(r.status) + " " + r.body);
}

void bench_cluster::shutdown(int node, const std::string& system) {
  rest("POST", registry_.url() + "/registry/system/shutdown",
       nlohmann::json{{"bootstrapperId", node_ids_.at(std::size_t(node))}, {"isolateSystemName", system}}
           .dump());
}

nlohmann::json bench_cluster::describe(int node) {
  return rest("GET", registry_.url() + "/registry/system/" + node_ids_.at(std::size_t(node))).json;
}

bool queue_probe::call(const std::function<void(detail::amqp_session&)>& rpc) {
  try {
    if (!session_) session_ = std::make_unique<detail::amqp_session>("127.0.0.1", port_, "guest", "guest");
    rpc(*session_);
    return true;
  } catch (const std::exception&) {
    session_.reset();
    return false;
  }
}

std::uint32_t queue_probe::depth(const std::string& queue) {
  std::uint32_t ready = 0;
  call([&](detail::amqp_session& s) {
    const auto* ok =
        amqp_queue_declare(s.connection(), detail::amqp_session::channel, amqp_cstring_bytes(queue.c_str()),
                           /*passive=*/1, 0, 0, 0, amqp_empty_table);
    s.check_last_rpc("queue.declare passive " + queue);
    ready = ok->message_count;
  });
  return ready;
}

void queue_probe::remove(const std::string& queue) {
  call([&](detail::amqp_session& s) {
    amqp_queue_delete(s.connection(), detail::amqp_session::channel, amqp_cstring_bytes(queue.c_str()), 0, 0);
    s.check_last_rpc("queue.delete " + queue);
  });
}

std::vector<std::string> raw_mode_args(const std::string& mode) {
  if (mode == "at-least-once") return {"--queue-type", "quorum", "--persistent", "--confirm-window", "1000"};
  return {"--queue-type", "transient", "--confirm-window", "0"};
}

std::map<std::string, double> run_raw(std::uint16_t port, const std::vector<std::string>& args) {
  std::string cmd = "'" + bin_path("dde-raw-amqp").string() + "'";
  for (auto& a : args) cmd += " '" + a + "'";
  cmd += " --port " + std::to_string(port);
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  std::map<std::string, double> result;
  std::istringstream words(out);
  std::string word;
  while (words >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    try {
      result[word.substr(0, eq)] = std::stod(word.substr(eq + 1));
    } catch (const std::exception&) {
    }
  }
  const std::string& command = args.front();
  const bool answered = command == "declare"
                            ? out.rfind("declared ", 0) == 0
                            : out.rfind("raw ", 0) == 0 && (result.count("rate") || command == "peek");
  if (!answered) {
    std::cerr << "[bench] dde-raw-amqp gave no answer (a rate, a peeked size or a declare) for: " << cmd
              << "\n"
              << out;
    result.clear();
  }
  return result;
}

double rate(double n, std::int64_t first_us, std::int64_t last_us) {
  return last_us > first_us ? n / (double(last_us - first_us) / 1e6) : 0;
}

double steady_rate(double n, double first_second, std::int64_t first_us, std::int64_t last_us) {
  return steady_rate(n, first_second, double(last_us - first_us) / 1e6);
}

stats_span read_span(const fs::path& dir, const std::string& prefix, const std::string& field) {
  stats_span s;
  for (auto& j : all_stats(dir, prefix)) {
    auto first = j.value("first_us", std::int64_t(0)), last = j.value("last_us", std::int64_t(0));
    ++s.files;
    if (j.value("finished", false)) ++s.finished;
    s.total += j.value(field, std::int64_t(0));
    if (first > 0 && (s.first_us == 0 || first < s.first_us)) s.first_us = first;
    s.last_us = std::max(s.last_us, last);
  }
  return s;
}

bool await_change(const fs::path& dir, const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (fd < 0) throw std::runtime_error("inotify_init1 failed");
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_fd{fd};
  // Watched before the first look, so a file that lands in between still wakes the wait.
  if (::inotify_add_watch(fd, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0)
    throw std::runtime_error("inotify_add_watch failed on " + dir.string());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(std::min<long long>(left.count(), 1000))) > 0) {
      alignas(inotify_event) char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
  }
  return true;
}

std::size_t count_files(const fs::path& dir, const std::string& suffix) {
  std::size_t k = 0;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) k += e.path().filename().string().ends_with(suffix);
  return k;
}

}  // namespace dde::bench
