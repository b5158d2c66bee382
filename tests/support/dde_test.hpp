#pragma once
// Test support: a throw-away RabbitMQ node, child processes, waiting for conditions.
// Everything lives under the build tree (DDE_TEST_TMP, set by CMake) and only binds to 127.0.0.1.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dde::test {

using namespace std::chrono_literals;

/// Polls `condition` until true or `timeout`; returns its last value. Use it to await events
/// (a file's content, a queue depth, a process exit) instead of fixed sleeps.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = 20ms);

/// A TCP port on 127.0.0.1 that was free a moment ago, picked at random below the kernel's ephemeral
/// range (where outgoing connections take their source ports) and never twice in one process.
std::uint16_t free_port();

/// The ports free_port picks from ({0, 0}: none, it asks the kernel): the machine's ports below the
/// ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), from 15000.
std::pair<std::uint16_t, std::uint16_t> listen_port_range();

/// Claims `port` among the test processes running beside this one (ctest -j): a file named after it
/// in DDE_TEST_TMP/ports, created exclusively, holding this process's pid. Without it two processes
/// could both find a port free and both start a daemon on it before either binds it. False while
/// another live process holds the claim; a claim whose process is gone is taken over. When the folder
/// cannot be used, true (the bind check alone decides). free_port claims every port it returns.
bool claim_port(std::uint16_t port);

/// A fresh, empty directory under the build tree's test area, named after `name` and the pid.
std::filesystem::path fresh_dir(const std::string& name);

/// Path of a built executable (build/bin/NAME) and of a built worker plugin (build/lib/workers/libNAME.so).
std::filesystem::path bin_path(const std::string& name);
std::filesystem::path worker_path(const std::string& name);

/// True when something accepts TCP connections on 127.0.0.1:port.
bool port_open(std::uint16_t port);

/// A child process; its stdout and stderr go to `log_file`. Killed (SIGKILL) on destruction if running.
class child_process {
 public:
  child_process(std::vector<std::string> argv, std::filesystem::path log_file,
                std::map<std::string, std::string> extra_env = {});
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  int pid() const { return pid_; }
  bool running();
  /// Sends `signal`.
  void signal(int signal);
  /// SIGTERM, then SIGKILL after `grace`; returns the exit status (as waitpid's).
  int stop(std::chrono::milliseconds grace = 5000ms);
  /// SIGKILL and reap.
  void kill9();
  /// Waits for exit up to `timeout`; the status, or nullopt if still running.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);
  /// The log so far.
  std::string log() const;
  const std::filesystem::path& log_file() const { return log_file_; }

 private:
  int pid_ = -1;
  std::optional<int> status_;
  std::filesystem::path log_file_;
};

/// How a command-line tool ended: its exit status (-1: killed or still running after 30 s), standard
/// output and standard error apart.
struct tool_result {
  int exit = -1;
  std::string out, err;
};
/// Runs build/bin/`tool` with `args` (standard input from `stdin_file`) and waits for it to end.
tool_result run_tool(const std::string& tool, const std::vector<std::string>& args,
                     const std::string& stdin_file = "/dev/null");

/// A throw-away RabbitMQ node (own node name, ports, data directory under the build tree).
class rabbitmq_node {
 public:
  /// Picks free ports and a fresh directory; does not start.
  explicit rabbitmq_node(const std::string& name);
  ~rabbitmq_node();  // stops the node if running and removes nothing (logs stay for post-mortems)

  /// Starts and waits until an AMQP login succeeds (up to `timeout`); throws on failure with the log tail.
  /// (A node boots in 5-15 s; beside busy loops on both cores, with other nodes booting, it took
  /// over 60 s.)
  void start(std::chrono::milliseconds timeout = 180000ms);
  /// Graceful stop (rabbitmqctl stop); waits until the port is closed.
  void stop();
  /// Graceful stop by SIGTERM to the node's VM (as a container runtime stops it): no CLI VM to boot
  /// first, so the stop begins at once, where rabbitmqctl's own VM took 18 s to start on a loaded
  /// machine. Waits until the VM has exited (SIGKILL after 30 s) and the port is closed; returns
  /// the VM's wait status (0: it halted by itself).
  int terminate();
  /// kill -9 of the node's Erlang VM.
  void kill9();
  bool running();

  std::uint16_t port() const { return port_; }
  const std::string& host() const { return host_; }  // "127.0.0.1"
  std::string user() const { return "guest"; }
  std::string password() const { return "guest"; }
  /// The Erlang node name, `<name>-<pid>@localhost`.
  const std::string& node_name() const { return node_name_; }
  /// The node's directory: data (mnesia/), logs (log/, server.log), config, cookie (home/).
  const std::filesystem::path& dir() const { return dir_; }
  /// Pid of the node's Erlang VM (beam.smp), or -1 when not running.
  int vm_pid();

  // Small AMQP helpers for assertions (each opens its own short connection).
  /// Messages ready in `queue` (passive declare), or nullopt if the queue does not exist.
  std::optional<std::uint32_t> queue_depth(const std::string& queue);
  /// Consumers of `queue` (passive declare), or nullopt if the queue does not exist.
  std::optional<std::uint32_t> queue_consumers(const std::string& queue);
  void delete_queue(const std::string& queue);
  /// All a quorum queue still holds, as its Ra state machine counts it now (`messages`): ready,
  /// unacknowledged, and dead-lettered at-least-once but not yet confirmed by the target (`dlx`, of
  /// those: a passive declare counts them nowhere). Asked through rabbitmqctl eval (about a second);
  /// nullopt if the queue does not exist; throws when rabbitmqctl fails or the queue is not a quorum
  /// queue.
  struct queue_totals_t {
    std::uint64_t messages = 0;
    std::uint64_t dlx = 0;
  };
  std::optional<queue_totals_t> queue_totals(const std::string& queue);
  /// Publishes `bodies` to `queue` through the default exchange (persistent if asked).
  void publish(const std::string& queue, const std::vector<std::string>& bodies, bool persistent = true);
  /// Gets one message from `queue` (basic.get, acked), or nullopt when empty.
  std::optional<std::string> get(const std::string& queue);
  /// Declares a durable queue: a quorum queue (x-queue-type=quorum) or a classic one.
  void declare_queue(const std::string& queue, bool quorum);
  /// The same with more x-arguments: strings (e.g. x-overflow) and integers (e.g. x-message-ttl).
  void declare_queue(const std::string& queue, bool quorum, const std::map<std::string, std::string>& strings,
                     const std::map<std::string, std::int64_t>& integers);
  /// Waits until every quorum queue of the node is in Ra's on-disk name registry (names.dets);
  /// false on timeout. RabbitMQ 3.10 (Ra 2.2) writes it about 1 s after a declare: a kill -9
  /// before that loses the queue for good (it comes back empty and leaderless). Call it
  /// between declaring a quorum queue and kill9().
  bool wait_quorum_queues_registered(std::chrono::milliseconds timeout = 10000ms);

  /// Adds an amqps listener (before start) on `tls_port()`, with the node's certificate and key and
  /// the CA clients are verified against; with `require_client_cert` a client without a certificate
  /// signed by that CA is refused. The plain listener stays (the AMQP helpers above use it).
  void enable_tls(const std::filesystem::path& ca, const std::filesystem::path& cert,
                  const std::filesystem::path& key, bool require_client_cert);
  /// Before start: the broker takes back a delivery left unacknowledged for `timeout`
  /// (consumer_timeout, 30 min by default), checked every second (channel_tick_interval).
  void set_consumer_timeout(std::chrono::milliseconds timeout);
  /// The amqps port (0 until enable_tls).
  std::uint16_t tls_port() const { return tls_port_; }

  /// Sets the memory alarm's threshold (rabbitmqctl set_vm_memory_high_watermark): 0 raises the
  /// alarm at once, so the broker blocks every publishing connection; false when rabbitmqctl failed.
  bool set_memory_watermark(double fraction);

  /// Sets the Erlang cookie (before start): nodes that share one can form a cluster.
  void use_cookie(const std::string& cookie);
  /// Joins the (running) cluster of `seed`: stop_app, join_cluster, start_app; false on failure.
  bool join_cluster(const rabbitmq_node& seed);
  /// The leader node (an Erlang node name) of every quorum queue, by queue name, as this node lists
  /// them; throws when rabbitmqctl fails.
  std::map<std::string, std::string> quorum_leaders();
  /// Waits until stopping this node would leave every quorum queue a majority of online members
  /// (rabbitmq-queues check_if_node_is_quorum_critical), as a rolling restart must; false on timeout.
  bool wait_not_quorum_critical(std::chrono::milliseconds timeout = 120000ms);
  /// SIGSTOP / SIGCONT to the node's VM: frozen, it holds its sockets open and answers nothing.
  void freeze();
  void thaw();

 private:
  std::map<std::string, std::string> environment() const;
  void write_config_files() const;
  /// (ready messages, consumers) of `queue`, or nullopt if it does not exist.
  std::optional<std::pair<std::uint32_t, std::uint32_t>> queue_counts(const std::string& queue);
  /// Runs rabbitmqctl against this node (same HOME, hence the same cookie); its exit status.
  int rabbitmqctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout);
  /// Runs rabbitmqctl; what it printed when it exited 0, otherwise nullopt.
  std::optional<std::string> rabbitmqctl_output(const std::vector<std::string>& args,
                                                std::chrono::milliseconds timeout);
  /// Runs rabbitmqctl (or another of RabbitMQ's CLI `script`s) with its output in `log`; its exit
  /// status, and what it printed in `output`.
  int run_ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
              const std::filesystem::path& log, std::string* output = nullptr, const char* script = nullptr);
  std::string log_tail() const;

  std::string name_;
  std::string node_name_;
  std::string host_ = "127.0.0.1";
  std::uint16_t port_ = 0;
  std::uint16_t dist_port_ = 0;
  std::uint16_t tls_port_ = 0;
  std::string tls_config_;
  std::string extra_config_;     ///< more rabbitmq.conf lines
  std::string advanced_config_;  ///< advanced.config, when not empty
  std::filesystem::path dir_;
  std::unique_ptr<child_process> server_;
};

/// The one broker shared by all tests of a test binary, started on first use, stopped at exit.
rabbitmq_node& shared_broker();

}  // namespace dde::test
