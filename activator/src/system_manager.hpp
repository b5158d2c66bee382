#pragma once
// The isolate systems of this node: starts each as a `dde-isolate-system` child process, talks to it
// over `/control`, restarts a crashed one with backoff and redeploys its pools, and adopts the
// systems that reattach after the activator itself restarted.

#include <sys/types.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "dde/activator/activator.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/control_frames.hpp"
#include "dde/protocol/result.hpp"
#include "processes.hpp"

namespace dde::activator {

/// The outcome of a request: its result, or why not with the HTTP status to answer as the code.
using outcome = result<nlohmann::json>;
using outcome_fn = std::function<void(outcome)>;
/// Done, with `result` (an empty object: nothing to tell).
inline outcome succeeded(nlohmann::json result = nlohmann::json::object()) {
  return outcome(std::move(result));
}
/// Refused with HTTP `status` and why.
inline outcome refused(int status, std::string why) {
  return http_failure<nlohmann::json>(status, std::move(why));
}

class system_manager : public net::ws_handler, public std::enable_shared_from_this<system_manager> {
 public:
  /// `processes`: how isolate systems are started and signalled (the operating system's by default).
  system_manager(boost::asio::io_context& io, manager_options options,
                 std::shared_ptr<process_table> processes = nullptr);

  /// Starts reaping children (SIGCHLD).
  void start();
  /// A child process ended with wait(2) `status` (SIGCHLD reports them; tests of a fake table too).
  void child_exited(pid_t pid, int status);
  /// Stops every isolate system (their pools drain) and calls `done`.
  void stop_all(std::function<void()> done);

  // Requests from the registry (registry/PROTOCOL.md).
  void deploy(nlohmann::json body, outcome_fn done);
  void shutdown(std::string system, std::string isolate, outcome_fn done);
  /// Every isolate system, or with `only` the pools it names (registry/PROTOCOL.md "describe").
  void describe(std::optional<protocol::node::describe_scope> only, outcome_fn done);
  void describe(outcome_fn done) { describe(std::nullopt, std::move(done)); }
  /// Goes up whenever what describe() would answer may have changed in a way the registry did not
  /// ask for: a system started, attached, restarted or gone, a request of the activator's own that a
  /// system answered (a restarted system's pools added again), an answer after its timeout, an event
  /// a system sent (a hot swap, a pool that scaled itself). The registry describes the whole node
  /// when it changes (its heartbeat's `ping` answers it), and only the pools a request of its own
  /// changed after that request. Any thread.
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void migrate(std::string system, std::string isolate, nlohmann::json workers_paths, outcome_fn done);
  /// Replaces a running pool's spec with `body` (same system, pool and MQS); the old spec runs again
  /// if the new one does not start.
  void redeploy(nlohmann::json body, outcome_fn done);
  void restart(std::string system, std::string isolate, outcome_fn done);
  /// KILL of one worker (`worker_id` a string) or of every worker (null) of a pool.
  void kill(std::string system, std::string isolate, nlohmann::json worker_id, outcome_fn done);
  /// Changes a pool's rate/maxInFlight (`limits`: {"rate"?, "maxInFlight"?}; absent = none).
  void set_rate(std::string system, std::string isolate, nlohmann::json limits, outcome_fn done);

  // `/control` endpoint.
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

 private:
  /// On the strand: stops pool `isolate` of `system` and starts it with `new_body`, or with its old
  /// body again if that fails.
  void replace_pool(const std::string& system, const std::string& isolate, nlohmann::json new_body,
                    outcome_fn done);

  struct record {
    std::string name, mqs, instance;
    pid_t pid = -1;
    int ops_port = 0;  ///< where the system serves /metrics and /health (its hello says; 0: unknown)
    bool own_child = true;
    bool stopping = false;
    std::string state = "starting";
    std::map<std::string, nlohmann::json> pools;  ///< isolate -> deploy body, for redeploys
    struct plugin_versions {
      std::string good_md5, good_copy;  ///< the last version that finished a message, and a copy of it
      std::string swapping_md5;         ///< a new version being swapped in, not yet proven
    };
    std::map<std::string, plugin_versions> versions;  ///< isolate -> what its plugin did
    std::shared_ptr<net::ws_connection> control;
    std::vector<std::function<void(bool, std::string)>> waiting;  ///< for the hello
    std::chrono::milliseconds backoff{0};
    std::chrono::steady_clock::time_point started;
    int restarts = 0;
    int deploying = 0;        ///< deploys waiting for it to attach or for their pool's answer
    bool discarding = false;  ///< stopping because a failed deploy left it with no pool
    std::vector<std::function<void()>> after_exit;  ///< deploys that came while it was being discarded
    std::string last_exit;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  struct pending {
    std::function<void(const protocol::control_response&)> on_response;
    std::shared_ptr<boost::asio::steady_timer> timer;
    std::string system;  ///< whose control link it went out on
    bool quiet = false;  ///< its answer leaves the version alone: a describe, or asked by the registry
  };
  /// Who a control request is for: the activator's own work, or a change the registry asked for
  /// (the registry describes the pools it changed, so the answer need not raise the version).
  enum class asker { activator, registry };
  void changed() { version_.fetch_add(1, std::memory_order_relaxed); }

  void spawn(record& r);
  /// `r`'s pools as deployed (their specs), each with `facts`: what describe says of a system that is
  /// not attached or did not answer; with `only` those of its pools only.
  nlohmann::json pools_as_deployed(const record& r, const nlohmann::json& facts,
                                   const std::set<std::string>& only = {}) const;
  /// Where the isolate systems keep copies of proven plugin versions and mark swaps in progress.
  std::string plugin_cache() const { return options_.log_dir + "/plugin-cache"; }
  void when_attached(const std::string& system, std::function<void(bool, std::string)> fn);
  void request(record& r, protocol::control_request req,
               std::function<void(const protocol::control_response&)> on_response,
               asker by = asker::activator);
  void on_hello(const std::shared_ptr<net::ws_connection>& conn, const protocol::control_hello& hello);
  void on_event(const std::shared_ptr<net::ws_connection>& conn, const nlohmann::json& event);
  void on_child_exit(pid_t pid, int status);
  void on_lost(record& r, const std::string& why);
  void watch_adopted(const std::string& name, pid_t pid, int checks_left);
  void redeploy(const std::string& system);
  /// `fresh`: a deploy or migration, refused when the system's MQS link is not up within
  /// mqs_link_timeout; otherwise (a redeploy) it waits for the MQS however long it takes. A fresh
  /// one was asked by the registry (see asker).
  void add_pool(const std::string& system, nlohmann::json body, bool fresh, outcome_fn done);
  /// A deploy to `system` ended; after a failure the system stops when it runs no pool and no other
  /// deploy waits for it.
  void deploy_ended(const std::string& system, bool ok);
  void wait_children();

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  manager_options options_;
  std::shared_ptr<process_table> procs_;
  boost::asio::signal_set sigchld_;
  std::map<std::string, record> systems_;
  std::map<std::uint64_t, pending> pending_;
  std::atomic<std::uint64_t> version_{1};
  std::uint64_t next_request_ = 1;
  bool stopping_all_ = false;
};

}  // namespace dde::activator
