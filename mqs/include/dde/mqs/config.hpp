#pragma once
/// \file
/// The settings of `dde-mqs`: defaults, and the options that fill them (dde/core/command_line.hpp: typed,
/// checked, also read from a JSON `--config` file).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "dde/mqs/queue_spec.hpp"
#include "dde/net/tls.hpp"

namespace dde::mqs {

/// One RabbitMQ node of the broker address list.
struct broker_node {
  std::string host;
  std::uint16_t port = 5672;
  std::string str() const;  ///< host:port ([v6]:port)
  bool operator==(const broker_node&) const = default;
};

/// What `--broker URL` names: `amqp[s]://[user@]host[:port][,host[:port]...][/vhost]`.
struct broker_url {
  bool tls = false;
  std::string user;  ///< empty: not given
  std::vector<broker_node> nodes;
  std::string vhost;  ///< empty: not given ("/" is "%2F" in a URL)
};
/// Parses a broker URL; the error says what is wrong (a password in it, a bad port, ...).
std::variant<broker_url, std::string> parse_broker_url(const std::string& text);

/// Every setting of the MQS; the defaults are those of `dde-mqs --help`.
struct config {
  std::string listen = "127.0.0.1";
  std::uint16_t port = 42043;
  std::string broker_host = "127.0.0.1";
  std::uint16_t broker_port = 5672;
  /// The nodes of a RabbitMQ cluster, tried in turn: from --broker, else broker_host:broker_port.
  std::vector<broker_node> brokers;
  std::string broker;                ///< --broker as given (empty: --broker-host and --broker-port)
  std::string broker_password_file;  ///< the broker password's file (--broker-password-file)
  std::string user = "guest";
  std::string password = "guest";
  std::string vhost = "/";
  std::uint16_t prefetch = 1;
  /// Replicas and leader of the quorum queues the MQS declares (--quorum-group-size, --queue-leader-locator).
  quorum_placement quorum;
  std::chrono::milliseconds idle_timeout{10000};
  /// A delivery held this long (waiting for credit or with a host) is renewed before the broker's
  /// consumer_timeout (30 min by default) takes it back: at-least-once ones through a lease queue,
  /// at-most-once ones by acking them early (mqs/PROTOCOL.md "Leases"). 0: never.
  std::chrono::milliseconds lease{600000};
  std::uint32_t confirm_window = 1000;
  /// Messages wait this long for a confirm with nothing settled meanwhile, and the publishing
  /// connection is replaced (a frozen or partitioned node holds it open and answers nothing); not while
  /// the broker blocks publishing. 0: never.
  std::chrono::milliseconds confirm_timeout{5000};
  /// A topic whose hosts hold credit, whose queue has ready messages and whose consumer got nothing
  /// for this long is stalled: /health degraded, counted, consumed afresh (stall_watch.hpp). 0: never.
  std::chrono::milliseconds stall_timeout{10000};
  std::size_t max_message = 4 * 1024 * 1024;
  std::size_t max_frame = 16 * 1024 * 1024;
  std::size_t backlog_messages = 100000;
  std::size_t backlog_bytes = 64 * 1024 * 1024;
  std::uint16_t heartbeat_s = 30;
  /// Threads running the WebSocket side and the dequeuer's and enqueuer's loops: the first all the time, the
  /// others while it lags by more than thread_lag (dde/core/net/elastic_threads.hpp; 0: all, always).
  unsigned threads = 2;
  std::chrono::microseconds thread_lag{1000};
  /// The dequeuer's loop on a thread of its own rather than on the io_context (for A/B runs:
  /// bench/profile/consume.sh with DDE_MQS_ARGS="--dequeuer-thread").
  bool dequeuer_thread = false;
  /// The enqueuer's loop on a thread of its own rather than on the io_context (always with broker_tls:
  /// rabbitmq-c writes each frame through OpenSSL and waits while the socket is full).
  bool enqueuer_thread = false;
  /// How the kernel schedules the MQS's threads (dde/core/daemon.hpp: apply_scheduling): "batch" or "normal".
  std::string scheduling = "batch";
  std::string log_level = "info";
  net::tls_options tls;             ///< wss/https when tls.cert_file is set (--tls-cert, --tls-key, ...)
  bool broker_tls = false;          ///< amqps to RabbitMQ (--broker-tls)
  std::string broker_ca;            ///< CA the broker's certificate must chain to (default: --tls-ca)
  std::string broker_cert;          ///< client certificate for the broker (default: none)
  std::string broker_key;           ///< its key
  std::string cluster_secret_file;  ///< the cluster secret's file (else $DDE_CLUSTER_SECRET)
  std::string cluster_secret;       ///< read from it at startup; links without it are refused
};

/// What the command line asked for.
struct command_line_result {
  config cfg;
  bool help = false;
  bool version = false;
  std::string error;  ///< empty when the command line was valid
};

/// Reads `argv` (`--name value` or `--name=value`); a `--config FILE` is applied first and the
/// other flags override it.
command_line_result parse_command_line(int argc, const char* const* argv);

/// The text of `--help`: every option with its default.
std::string help_text();
/// What `--version` prints.
std::string version_text();

}  // namespace dde::mqs
