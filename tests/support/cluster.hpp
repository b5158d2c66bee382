#pragma once
// A local DDE cluster for integration tests: dde-mqs and dde-isolate-system child processes
// against a real broker, and readers for the sample workers' stats and sequence logs.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "dde_test.hpp"

namespace dde::test {

/// TLS for a daemon these helpers start (none when `cert` is empty): --tls-cert, --tls-key,
/// --tls-ca and --tls-verify-client.
struct tls_settings {
  std::filesystem::path cert, key, ca;
  bool verify_client = false;
  bool enabled() const { return !cert.empty(); }
  std::vector<std::string> args() const;
};

/// A running dde-mqs on a free port.
struct mqs_process {
  std::uint16_t port = 0;
  std::unique_ptr<child_process> proc;
  bool tls = false;
  std::string url() const {
    return (tls ? "wss://" : "ws://") + std::string("127.0.0.1:") + std::to_string(port) + "/mqs";
  }
};

/// Starts dde-mqs against `broker` and waits until it listens; `env` is added to its environment
/// (e.g. DDE_CLUSTER_SECRET); `extra_args` go last (e.g. --broker-tls).
mqs_process start_mqs(rabbitmq_node& broker, const std::filesystem::path& dir, int prefetch = 64,
                      std::uint16_t port = 0, const std::map<std::string, std::string>& env = {},
                      const tls_settings& tls = {}, const std::vector<std::string>& extra_args = {});

/// Starts a dde-isolate-system named `system` with `pools` (pool spec bodies); `env` is added to its
/// environment; `extra_args` go last (e.g. --ops-port).
std::unique_ptr<child_process> start_host(const std::string& system, const std::string& mqs_url,
                                          const std::vector<nlohmann::json>& pools,
                                          const std::filesystem::path& log_file,
                                          const std::map<std::string, std::string>& env = {},
                                          const std::vector<std::string>& extra_args = {});

/// A running dde-registry on a free port.
/// With TLS, `rest` and `node_id` need the CA (and a client certificate if the registry verifies
/// clients): set them with net::set_default_client_tls in the test.
struct registry_process {
  std::uint16_t port = 0;
  std::unique_ptr<child_process> proc;
  bool tls = false;
  std::string token;  ///< the admin token the helpers send (empty: none)
  std::string url() const {
    return (tls ? "https://" : "http://") + std::string("127.0.0.1:") + std::to_string(port);
  }
  std::string ws_url() const {
    return (tls ? "wss://" : "ws://") + std::string("127.0.0.1:") + std::to_string(port) + "/registry";
  }
};
/// Waits until it answers: active, or a standby of a registry pair (--state-url).
/// `env` is added to its environment; its DDE_ADMIN_TOKEN, if any, becomes `token`.
/// `extra_args` go last (e.g. --heartbeat-ms 0).
registry_process start_registry(const std::filesystem::path& dir, std::uint16_t port = 0,
                                const std::map<std::string, std::string>& env = {},
                                const tls_settings& tls = {},
                                const std::vector<std::string>& extra_args = {});

/// A running dde-activator registered with a registry.
struct activator_process {
  activator_process() = default;
  activator_process(activator_process&&) = default;
  activator_process& operator=(activator_process&&) = default;
  /// Stops the activator with SIGTERM, so it stops its isolate systems too (none is left behind).
  ~activator_process() {
    if (proc && proc->running()) proc->stop(15s);
  }
  std::uint16_t port = 0;
  std::string name;
  std::unique_ptr<child_process> proc;
  bool tls = false;
  std::string url() const {
    return (tls ? "wss://" : "ws://") + std::string("127.0.0.1:") + std::to_string(port) + "/activator";
  }
};
/// Starts an activator named `name` (its isolate systems log to `dir/<name>/`) and waits until the
/// registry lists it.
/// `extra_env` is added to its environment (and so to its isolate systems').
activator_process start_activator(const registry_process& registry, const std::filesystem::path& dir,
                                  const std::string& name, std::uint16_t port = 0,
                                  const std::vector<std::string>& extra_args = {},
                                  const std::map<std::string, std::string>& extra_env = {},
                                  const tls_settings& tls = {});

/// An HTTP exchange with a JSON answer (`json` is null when the body is not JSON).
struct rest_answer {
  int status = 0;
  std::string body;
  nlohmann::json json;
};
/// With a `token`, it goes as `Authorization: Bearer`.
rest_answer rest(const std::string& method, const std::string& url, const std::string& body = {},
                 const std::string& token = {});

/// The bootstrapperId of the node called `name`, or "" when it is not listed.
std::string node_id(const registry_process& registry, const std::string& name);

/// A thesis deploy body (section 3.2.2) for a sample plugin.
nlohmann::json deploy_body(const std::string& node, const std::string& mqs_url, const std::string& system,
                           const std::string& isolate, const std::string& plugin, nlohmann::json args,
                           std::vector<std::string> workers_paths = {"localhost"},
                           const std::string& router = "roundRobin");

/// A pool spec for a sample worker plugin.
nlohmann::json pool(const std::string& system, const std::string& isolate, const std::string& plugin,
                    nlohmann::json args, int workers = 1, const std::string& mode = "at-least-once");

/// Sum of the numeric fields of every `prefix*.json` stats file in `dir`.
nlohmann::json sum_stats(const std::filesystem::path& dir, const std::string& prefix);

/// Every JSON stats file `prefix*.json` in `dir`.
std::vector<nlohmann::json> all_stats(const std::filesystem::path& dir, const std::string& prefix);

/// What the consumers' sequence logs in `dir` hold.
struct seq_report {
  std::uint64_t lines = 0;
  std::set<std::int64_t> unique;
  /// Lines per log file (one file per consumer process: consumer-PID.log), by file name. A consumer
  /// writes its line before it acks, so these counts are final once the messages are all seen.
  std::map<std::string, std::uint64_t> per_file;
  std::uint64_t duplicates() const { return lines - unique.size(); }
  /// Sequence numbers in [0, n) that never arrived.
  std::vector<std::int64_t> missing(std::int64_t n) const;
};
/// What the sequence logs `prefix*.log` in `dir` hold (the consumer's by default).
seq_report read_seq_logs(const std::filesystem::path& dir, const std::string& prefix = "consumer-");

/// One line of the echo workers' logs: "SEQ vVERSION MICROS REDELIVERED".
struct echo_line {
  std::int64_t seq;
  int version;
  std::int64_t time_us;
  bool redelivered;
  std::string worker;  ///< the id of the instance that handled it
};
/// Messages handled more than once although the broker did not redeliver them: what at-least-once
/// allows is a second handling of a redelivered message, nothing else. So each message may have one
/// handling not flagged redelivered (the original), whichever handling came first: two workers may
/// handle the original and a flagged copy at once, the copy a few microseconds sooner.
std::size_t unexplained_duplicates(const std::vector<echo_line>& log);
/// The echo logs in `dir`, in the order they were written.
std::vector<echo_line> read_echo_logs(const std::filesystem::path& dir);
/// The same, by file (echo-PID.log: one process each).
std::map<std::string, std::vector<echo_line>> read_echo_logs_by_file(const std::filesystem::path& dir);

/// The most of `times` (any order) found in any window [t, t + window) of that length.
std::size_t densest_window(std::vector<std::int64_t> times, std::int64_t window);
/// The seqs that api_caller logged as "SEQ OK MICROS" in `file`.
std::set<std::int64_t> read_api_successes(const std::filesystem::path& file);

/// Replaces `target` atomically (a copy beside it, then rename), as a deployment tool would.
void install_file(const std::filesystem::path& source, const std::filesystem::path& target);

}  // namespace dde::test
