// Experiment 9: each daemon's resident memory, idle and under the load of the consumption
// targets (at-most-once, prefetch 64, 64 B, consumers draining a filled queue).
#include <dirent.h>

#include <fstream>
#include <mutex>

#include "experiments.hpp"
#include "mqs_stats_client.hpp"
#include "prometheus_text.hpp"

namespace dde::bench {
namespace {

using namespace std::chrono_literals;
using test::wait_until;

/// VmRSS of `pid` in KiB (/proc/<pid>/status); 0 once it is gone.
long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

/// The dde-isolate-system processes running isolate system `system` (its `--name`).
std::vector<int> isolate_system_pids(const std::string& system) {
  std::vector<int> pids;
  DIR* proc = ::opendir("/proc");
  if (!proc) return pids;
  while (const dirent* e = ::readdir(proc)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    if (argv.empty() || !argv[0].ends_with("dde-isolate-system")) continue;
    for (std::size_t i = 1; i + 1 < argv.size(); ++i)
      if (argv[i] == "--name" && argv[i + 1] == system) pids.push_back(pid);
  }
  ::closedir(proc);
  return pids;
}

/// The counter `name` of `topic` at the MQS of `url` (ws://host:port/mqs); 0 while it has none.
long mqs_counter(const std::string& url, const std::string& name, const std::string& topic) {
  const auto metrics = test::rest("GET", registry::mqs_http_base(url).value() + "/metrics");
  return long(test::parse_prometheus(metrics.body).value(name, {{"pool", topic}}).value_or(0));
}

/// What one row of the table measures: a kind of process, its pids looked up at each sample (isolate
/// systems come and go).
struct group {
  std::string name;
  std::function<std::vector<int>()> pids;
};

struct reading {
  long kib = 0;
  int processes = 0;
};

reading read_pids(const std::vector<int>& pids) {
  reading r;
  for (int pid : pids)
    if (const long kib = rss_kib(pid); kib > 0) r.kib += kib, ++r.processes;
  return r;
}

reading read_group(const group& g) { return read_pids(g.pids()); }

/// Samples every group every 20 ms on a thread of its own until `stop`; keeps each one's peak. A
/// group's pids are looked up until found (at most every 100 ms), then kept: scanning /proc every
/// 20 ms would cost the cores the flow measured runs on. A process that may live shorter than that
/// (the producer's pool on a fast run) is looked up and read at once with `look_now` while it is
/// known to run, so a loaded machine cannot leave it unseen.
class peak_sampler {
 public:
  explicit peak_sampler(const std::vector<group>& groups)
      : groups_(groups), pids_(groups.size()), peaks_(groups.size()), thread_([this] {
          while (!stop_) {
            sample();
            std::this_thread::sleep_for(20ms);
          }
        }) {}
  ~peak_sampler() { stop(); }
  void look_now(std::size_t group) {
    std::lock_guard lock(mutex_);
    if (pids_[group].empty()) pids_[group] = groups_[group].pids();
    read(group);
  }
  std::vector<reading> stop() {
    if (thread_.joinable()) {
      stop_ = true;
      thread_.join();
      sample();
    }
    return peaks_;
  }

 private:
  void sample() {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const bool look = now - last_lookup_ >= 100ms;
    if (look) last_lookup_ = now;
    for (std::size_t i = 0; i < groups_.size(); ++i) {
      if (pids_[i].empty() && look) pids_[i] = groups_[i].pids();
      read(i);
    }
  }
  void read(std::size_t i) {
    const auto r = read_pids(pids_[i]);
    peaks_[i].kib = std::max(peaks_[i].kib, r.kib);
    peaks_[i].processes = std::max(peaks_[i].processes, r.processes);
  }
  std::mutex mutex_;  ///< look_now runs on the caller's thread
  const std::vector<group>& groups_;
  std::vector<std::vector<int>> pids_;
  std::chrono::steady_clock::time_point last_lookup_{};
  std::vector<reading> peaks_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct memory_row {
  std::string process;
  int processes = 0;
  long idle_kib = 0, peak_kib = 0, after_kib = 0;
};

/// Deploys `consumers` consumers (credits 64; each holds its first message until released), takes
/// the idle reading once they are up, has one producer fill the queue with `n` messages of 64 B and
/// waits until the broker has them all, then releases the consumers; the peaks are sampled from the
/// producer's start until the consumers have every message, the after reading is taken with the
/// consumer pools still deployed. Returns the rows and the consumption rate.
std::vector<memory_row> measure_memory(bench_cluster& c, const setup& s, int consumers, long n,
                                       double& consumed) {
  const auto url = s.mqs.front();
  constexpr std::size_t producer_group = 4;
  const std::vector<group> groups{
      {"dde-registry", [&] { return std::vector<int>{c.registry_pid()}; }},
      {"dde-activator (one node)", [&] { return std::vector<int>{c.activator_pid(0)}; }},
      {"dde-mqs", [&] { return std::vector<int>{c.mqs_pid(url)}; }},
      {"dde-isolate-system: the consumers' pools", [&] { return isolate_system_pids(s.system); }},
      {"dde-isolate-system: the producer's pool", [&] { return isolate_system_pids(s.system + "p"); }},
      {"RabbitMQ (beam.smp)", [&] { return std::vector<int>{c.broker().vm_pid()}; }},
  };
  const auto go = s.stats_dir / "consumers.go";
  const int used =
      deploy_consumers(c, s, consumers, 64, {{"stats_dir", s.stats_dir}, {"start_file", go.string()}});
  // Up once each consumer process has written its stats file (at its workers' start).
  wait_until([&] { return read_span(s.stats_dir, "consumer-", "received").files >= std::size_t(used); }, 30s,
             10ms);
  std::vector<memory_row> rows;
  for (auto& g : groups) {
    const auto r = read_group(g);
    rows.push_back({g.name, r.processes, r.kib});
  }
  peak_sampler sampler(groups);
  // Until the producer has sent everything, then until the broker holds it (but for the consumers'
  // windows, the prefetch of 64 each): the queue is full before the consumers start, as in
  // experiment 1, and no publishing shares the cores with their consumption.
  produce(c, s, n, 1, 64, false, [&] { sampler.look_now(producer_group); });
  // In the queue, or delivered to the consumers (the MQS's own consumers of the topic, one per
  // worker, each buffer up to the prefetch in between).
  const auto topic = s.system + ".consumer";
  wait_until(
      [&] {
        return c.queue_depth(topic) + mqs_counter(url, "dde_mqs_consumed_total", topic) + 64 * consumers >= n;
      },
      60s, 5ms);
  release_together(go, s.stats_dir, "consumer-", "holding", consumers);
  consumed = await_consumed(c, s, n);
  const auto peaks = sampler.stop();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    rows[i].processes = std::max(rows[i].processes, peaks[i].processes);
    rows[i].peak_kib = peaks[i].kib;
    rows[i].after_kib = read_group(groups[i]).kib;
  }
  stop_systems(c, s.system, used, s.system + ".consumer");
  return rows;
}

std::string mib(long kib) { return kib > 0 ? num(double(kib) / 1024, 1) : "-"; }

}  // namespace

table exp9_memory(suite_context& ctx) {
  table t{
      "exp9_memory",
      "Resident memory (VmRSS, MiB): idle (the consumer pools deployed, no message yet), the peak "
      "while one producer fills the queue and the consumers drain it (at-most-once, prefetch 64, credits 64, "
      "64 B; sampled every 20 ms), and after (the consumer pools still deployed); run first, on a fresh "
      "cluster; `-`: not running then",
      {"consumers", "messages", "ours_msg_s", "process", "processes", "idle_mib", "peak_mib", "after_mib"}};
  const std::vector<int> consumers = ctx.quick ? std::vector<int>{1} : std::vector<int>{1, 32};
  for (int n_consumers : consumers) {
    const long n = ctx.quick ? 20000 : 40000;  // as experiment 1's prefetch-64 points
    double consumed = 0;
    const auto rows =
        measure_memory(ctx.cluster, ctx.next("at-most-once", ctx.mqs(64, 1)), n_consumers, n, consumed);
    std::string line = "exp9 memory, " + std::to_string(n_consumers) + " consumers, " + num(consumed) +
                       " msg/s (idle / peak / after, MiB):";
    for (auto& r : rows) {
      t.add({std::to_string(n_consumers), std::to_string(n), num(consumed), r.process,
             std::to_string(r.processes), mib(r.idle_kib), mib(r.peak_kib), mib(r.after_kib)});
      line +=
          " " + r.process + " " + mib(r.idle_kib) + " / " + mib(r.peak_kib) + " / " + mib(r.after_kib) + ";";
    }
    ctx.clock.line(line);
  }
  return t;
}

}  // namespace dde::bench
