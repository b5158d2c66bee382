#pragma once
// The local cluster of the benchmark suite: one throw-away RabbitMQ node, a dde-registry, several
// dde-activator nodes and dde-mqs processes started on demand (per prefetch), driven only through
// the registry's REST API, as a user would. Plus the raw rabbitmq-c baseline (dde-raw-amqp).
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "amqp_session.hpp"
#include "cluster.hpp"

namespace dde::bench {

/// One pool to deploy: `workers` instances of `plugin` as `system/isolate`.
struct pool_request {
  std::string system, isolate, plugin;
  nlohmann::json args = nlohmann::json::object();
  int workers = 1;
  std::string mode = "at-least-once";
  int credits = 8;
};

/// What the measurements ask of a cluster, however it was started: the suite's own (bench_cluster)
/// or one that deploy/cluster.sh started and ddectl drives, as the manual tells users (public_cluster).
class cluster_api {
 public:
  cluster_api() = default;
  virtual ~cluster_api() = default;
  cluster_api(const cluster_api&) = delete;
  cluster_api& operator=(const cluster_api&) = delete;

  /// The activator nodes pools are spread over, numbered from 0.
  virtual int nodes() const = 0;
  /// Where the daemons' logs are (a stalled point's report reads their warnings).
  virtual const std::filesystem::path& dir() const = 0;
  /// The WebSocket URL of MQS number `index` among those with `prefetch`.
  virtual std::string mqs_url(int prefetch, int index = 0) = 0;
  /// Deploys `pool` on node `node` attached to `mqs_url`; throws on failure.
  virtual void deploy(int node, const std::string& mqs_url, const pool_request& pool) = 0;
  /// Stops isolate system `system` on node `node`.
  virtual void shutdown(int node, const std::string& system) = 0;
  /// Node `node`'s isolate systems, pools and their stats (GET /registry/system/{id}).
  virtual nlohmann::json describe(int node) = 0;
  /// Messages ready in `queue` (0 when it does not exist yet).
  virtual std::uint32_t queue_depth(const std::string& queue) = 0;
  virtual void delete_queue(const std::string& queue) = 0;
  /// The broker's AMQP port on 127.0.0.1 (user guest), for the raw baseline.
  virtual std::uint16_t broker_port() = 0;
  /// The pid of the broker's Erlang VM, whose CPU per message is measured.
  virtual int broker_pid() = 0;
};

/// Passive declares over one kept connection to a broker: polling with a new connection each time
/// would load the broker being measured.
class queue_probe {
 public:
  explicit queue_probe(std::uint16_t port) : port_(port) {}
  /// Messages ready in `queue`, 0 when it does not exist.
  std::uint32_t depth(const std::string& queue);
  /// Deletes `queue` (nothing when it does not exist).
  void remove(const std::string& queue);

 private:
  /// Runs `rpc` on the kept connection (opened on first use); false when the broker refused it,
  /// which closes the channel: the next call starts over on a new connection.
  bool call(const std::function<void(test::detail::amqp_session&)>& rpc);
  std::uint16_t port_;
  std::unique_ptr<test::detail::amqp_session> session_;
};

class bench_cluster final : public cluster_api {
 public:
  /// Starts the broker, the registry and `nodes` activators under `dir`.
  bench_cluster(std::filesystem::path dir, int nodes);
  ~bench_cluster() override;

  int nodes() const override { return int(node_ids_.size()); }
  test::rabbitmq_node& broker() { return broker_; }
  const std::filesystem::path& dir() const override { return dir_; }

  /// Started on first use.
  std::string mqs_url(int prefetch, int index = 0) override;
  /// The port the MQS of `url` (one mqs_url gave) listens on.
  std::uint16_t mqs_port(const std::string& url);
  /// Kills the MQS of `url` (SIGKILL): its hosts and broker connections drop at once.
  void kill_mqs(const std::string& url);
  /// Starts a new MQS (same prefetch) on the port of `url`'s, killed before; returns once it listens.
  void restart_mqs(const std::string& url);
  /// POST /registry/deploy.
  void deploy(int node, const std::string& mqs_url, const pool_request& pool) override;
  /// POST /registry/system/shutdown.
  void shutdown(int node, const std::string& system) override;
  nlohmann::json describe(int node) override;
  /// The processes of the daemons, for their resident memory (experiment 9).
  int registry_pid() const { return registry_.proc->pid(); }
  int activator_pid(int node) const { return activators_.at(std::size_t(node)).proc->pid(); }
  int mqs_pid(const std::string& url) { return find_mqs(url)->second.proc->pid(); }
  std::uint32_t queue_depth(const std::string& queue) override { return probe_.depth(queue); }
  void delete_queue(const std::string& queue) override { broker_.delete_queue(queue); }
  std::uint16_t broker_port() override { return broker_.port(); }
  int broker_pid() override { return broker_.vm_pid(); }

 private:
  std::filesystem::path dir_;
  test::rabbitmq_node broker_;
  test::registry_process registry_;
  std::vector<test::activator_process> activators_;
  std::vector<std::string> node_ids_;
  std::map<std::pair<int, int>, test::mqs_process> mqs_;  ///< by (prefetch, index)
  std::map<std::pair<int, int>, test::mqs_process>::iterator find_mqs(const std::string& url);
  queue_probe probe_;
};

/// Queue settings of the raw baseline matching a DDE delivery mode (same queue kind, persistence,
/// publisher confirms as dde-mqs uses).
std::vector<std::string> raw_mode_args(const std::string& mode);

/// Runs dde-raw-amqp with `args` against the broker on `port`; its result line as key -> number
/// ("rate", "p50_us", "size", ...). Empty when it failed (its stderr is echoed).
std::map<std::string, double> run_raw(std::uint16_t port, const std::vector<std::string>& args);
inline std::map<std::string, double> run_raw(test::rabbitmq_node& broker,
                                             const std::vector<std::string>& args) {
  return run_raw(broker.port(), args);
}

/// A throughput of `n` messages over [first_us, last_us]; 0 when the interval is empty.
double rate(double n, std::int64_t first_us, std::int64_t last_us);
/// steady_rate (steady_rate.hpp) over [first_us, last_us], wall-clock µs.
double steady_rate(double n, double first_second, std::int64_t first_us, std::int64_t last_us);

/// Min of `first_us` and max of `last_us` over the stats files `prefix*` in `dir`, summed `field`.
struct stats_span {
  std::int64_t first_us = 0, last_us = 0, total = 0;
  std::size_t files = 0, finished = 0;
};
stats_span read_span(const std::filesystem::path& dir, const std::string& prefix, const std::string& field);

/// Waits until `done()`, which is asked at once, then whenever a file in `dir` was written or renamed
/// into place (a worker's stats, a requester's `.rtt`), and at least once a second; false after
/// `timeout`. Woken by inotify, not by polling: reading every stats file every few ms while DDE runs
/// costs the cores it runs on, which the raw client, waited for as a child process, never pays.
bool await_change(const std::filesystem::path& dir, const std::function<bool()>& done,
                  std::chrono::milliseconds timeout);
/// The files in `dir` named `*suffix`.
std::size_t count_files(const std::filesystem::path& dir, const std::string& suffix);

}  // namespace dde::bench
