#include "dde/mqs/config.hpp"

#include <limits>

#include "dde/core/command_line.hpp"
#include "dde/core/daemon.hpp"
#include "dde/net/auth.hpp"

namespace dde::mqs {
namespace {

constexpr const char* summary =
    "The message-queuing system of DDE. Isolate-system hosts connect over WebSocket\n"
    "(ws://HOST:PORT/mqs, protocol in mqs/PROTOCOL.md); messages go to and come from RabbitMQ.";

constexpr std::uint64_t day_ms = 24ull * 3600 * 1000;

void define_listener(CLI::App& app, config& c) {
  app.add_option("--listen", c.listen, "address the WebSocket server binds to")->type_name("HOST");
  app.add_option("--port", c.port, "WebSocket port (0 picks a free one); the endpoint is ws://HOST:PORT/mqs")
      ->type_name("PORT")
      ->check(CLI::Range(0, 65535));
}

void define_broker(CLI::App& app, config& c) {
  app.add_option(
         "--broker", c.broker,
         "the RabbitMQ node, or the nodes of a cluster, as amqp[s]://[USER@]HOST[:PORT][,HOST[:PORT]...]"
         "[/VHOST]: the publishing connection and each topic's consumer take the first node that "
         "answers (topics start at different nodes) and move to the next when theirs goes away. "
         "Instead of --broker-host, --broker-port, --vhost and --broker-tls (amqps)")
      ->type_name("URL");
  app.add_option("--broker-host", c.broker_host, "RabbitMQ host")->type_name("HOST");
  app.add_option("--broker-port", c.broker_port, "RabbitMQ AMQP port")
      ->type_name("PORT")
      ->check(CLI::Range(1, 65535));
  app.add_option("--user", c.user, "RabbitMQ user")->type_name("NAME");
  app.add_option(
         "--password", c.password,
         "RabbitMQ password (never logged; ps shows it: prefer --broker-password-file or the variable)")
      ->type_name("SECRET")
      ->envname("DDE_BROKER_PASSWORD");
  app.add_option("--broker-password-file", c.broker_password_file, "file holding the RabbitMQ password")
      ->type_name("FILE");
  app.add_option("--vhost", c.vhost, "RabbitMQ virtual host")->type_name("VHOST");
  app.add_option("--prefetch", c.prefetch,
                 "basic.qos prefetch of each topic's consumer: unacknowledged messages it may hold")
      ->type_name("N")
      ->check(CLI::Range(1, 65535));
  app.add_option(
         "--quorum-group-size", c.quorum.group_size,
         "replicas of each quorum queue the MQS declares on a RabbitMQ cluster (0: one on every node)")
      ->type_name("N")
      ->check(CLI::Range(0, 255));
  app.add_option("--queue-leader-locator", c.quorum.leader_locator,
                 "where a new quorum queue's leader goes: balanced (the node leading fewest) or client-local")
      ->type_name("RULE")
      ->check(CLI::IsMember({"balanced", "client-local"}));
  app.add_option("--heartbeat", c.heartbeat_s, "AMQP heartbeat asked of the broker (0 disables)")
      ->type_name("SECONDS")
      ->check(CLI::Range(0, 65535));
}

void define_flow(CLI::App& app, config& c) {
  add_duration(app, "--idle-timeout-ms", c.idle_timeout, 1, day_ms,
               "a topic's dequeuer closes after this long with no pull, no credit and nothing unacknowledged")
      ->type_name("MS");
  add_duration(
      app, "--lease-ms", c.lease, 0, day_ms,
      "renew a delivery held this long (a long job, or one waiting for credit) before the broker's "
      "consumer_timeout takes it back; keep it below that timeout (RabbitMQ's default: 30 min). 0: never")
      ->type_name("MS")
      ->check([](const std::string& v) {
        return v != "0" && std::stoll(v) < 100 ? "must be 0 (never) or at least 100" : "";
      });
  app.add_option("--confirm-window", c.confirm_window,
                 "at-least-once messages published and not yet confirmed by the broker, at most")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  add_duration(
      app, "--confirm-timeout-ms", c.confirm_timeout, 0, day_ms,
      "published messages wait this long for a confirm, nothing settled meanwhile, and the publishing "
      "connection moves to the next node (a frozen broker node answers nothing). 0: never")
      ->type_name("MS");
  add_duration(
      app, "--stall-timeout-ms", c.stall_timeout, 0, day_ms,
      "a topic whose hosts hold credit and whose queue has ready messages, with nothing delivered for "
      "this long, turns /health degraded and is consumed again on a fresh connection. 0: never")
      ->type_name("MS");
  app.add_option("--max-message", c.max_message,
                 "largest record body (message) accepted; larger ones get an error record")
      ->type_name("BYTES")
      ->check(CLI::Range(std::uint64_t(1), std::uint64_t(std::numeric_limits<std::uint32_t>::max())));
  app.add_option("--max-frame", c.max_frame,
                 "largest WebSocket message; a larger one closes that connection with 1009")
      ->type_name("BYTES")
      ->check(CLI::Range(std::uint64_t(1024), std::uint64_t(std::numeric_limits<std::uint32_t>::max())));
  app.add_option(
         "--backlog-messages", c.backlog_messages,
         "enqueued messages not yet published/confirmed above which clients stop being read (backpressure)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--backlog-bytes", c.backlog_bytes, "the same limit in bytes of message bodies")
      ->type_name("BYTES")
      ->check(CLI::Range(std::uint64_t(1024), std::numeric_limits<std::uint64_t>::max() / 2));
}

void define_threads(CLI::App& app, config& c) {
  app.add_option("--threads", c.threads,
                 "threads running the WebSocket side, the dequeuer and the enqueuer: the first always, the "
                 "others while it lags")
      ->type_name("N")
      ->check(CLI::Range(1, 64));
  add_duration(
      app, "--thread-lag-us", c.thread_lag, 0, 10ll * 1000 * 1000,
      "a thread beyond the first joins while a probe waits this long to run or the first is 90% busy "
      "(0: every thread runs all the time)")
      ->type_name("US");
  app.add_flag("--dequeuer-thread", c.dequeuer_thread,
               "run the dequeuer's loop on a thread of its own (woken through an eventfd) rather than on the "
               "io_context");
  app.add_flag("--enqueuer-thread", c.enqueuer_thread,
               "run the enqueuer's loop on a thread of its own (woken through an eventfd) rather than on the "
               "io_context (always so with --broker-tls)");
  app.add_option("--scheduling", c.scheduling, dde::scheduling_help)
      ->type_name("POLICY")
      ->check(dde::scheduling_check);
}

void define_security(CLI::App& app, config& c) {
  app.add_option("--tls-cert", c.tls.cert_file, "PEM certificate (chain): serve wss/https instead of ws/http")
      ->type_name("FILE");
  app.add_option("--tls-key", c.tls.key_file, "PEM private key of --tls-cert")->type_name("FILE");
  app.add_option("--tls-ca", c.tls.ca_file,
                 "PEM CA certificate(s) client certificates (and by default the broker's) must chain to")
      ->type_name("FILE");
  app.add_flag("--tls-verify-client", c.tls.verify_client,
               "refuse clients without a certificate signed by --tls-ca");
  app.add_flag("--broker-tls", c.broker_tls,
               "amqps: TLS to RabbitMQ, its certificate verified (give --broker-port, e.g. 5671)");
  app.add_option("--broker-ca", c.broker_ca,
                 "PEM CA the broker's certificate must chain to (default: --tls-ca)")
      ->type_name("FILE");
  app.add_option("--broker-cert", c.broker_cert, "PEM client certificate presented to the broker")
      ->type_name("FILE");
  app.add_option("--broker-key", c.broker_key, "PEM private key of --broker-cert")->type_name("FILE");
  app.add_option(
         "--cluster-secret-file", c.cluster_secret_file,
         "file holding the cluster secret that hosts must send (else $DDE_CLUSTER_SECRET; none: links "
         "are open)")
      ->type_name("FILE");
}

/// Every option of dde-mqs, bound to `c`.
void define_options(dde::command_line& line, config& c) {
  auto& app = line.app();
  define_listener(app, c);
  define_broker(app, c);
  define_flow(app, c);
  define_threads(app, c);
  define_security(app, c);
  add_log_level(app, c.log_level);
  line.accept_config_file("{\"port\": 42043, \"prefetch\": 8}");
  app.footer("SIGINT or SIGTERM stops the MQS cleanly. Exit status 2 for a bad command line.");
}

/// The broker nodes and password, from --broker and --broker-password-file or the older flags.
std::string settle_broker(config& cfg) {
  if (!cfg.broker_password_file.empty()) {
    try {
      cfg.password = net::read_secret_file(cfg.broker_password_file);
    } catch (const std::invalid_argument& e) {
      return std::string("--broker-password-file: ") + e.what();
    }
  }
  if (cfg.broker.empty()) {
    cfg.brokers = {{cfg.broker_host, cfg.broker_port}};
    return {};
  }
  auto parsed = parse_broker_url(cfg.broker);
  if (auto* error = std::get_if<std::string>(&parsed)) return *error;
  auto& url = std::get<broker_url>(parsed);
  cfg.brokers = url.nodes;
  cfg.broker_host = url.nodes.front().host;
  cfg.broker_port = url.nodes.front().port;
  if (!url.user.empty()) cfg.user = url.user;
  if (!url.vhost.empty()) cfg.vhost = url.vhost;
  cfg.broker_tls = cfg.broker_tls || url.tls;
  return {};
}

/// What no single option can check: options that go together.
std::string check_together(const config& cfg) {
  if (cfg.max_message + 64 * 1024 + 8 > cfg.max_frame)
    return "--max-message must leave room for a header within --max-frame";
  if (cfg.tls.cert_file.empty() != cfg.tls.key_file.empty()) return "--tls-cert and --tls-key go together";
  if (cfg.tls.verify_client && (cfg.tls.cert_file.empty() || cfg.tls.ca_file.empty()))
    return "--tls-verify-client needs --tls-cert, --tls-key and --tls-ca";
  if (cfg.broker_cert.empty() != cfg.broker_key.empty()) return "--broker-cert and --broker-key go together";
  return {};
}

}  // namespace

command_line_result parse_command_line(int argc, const char* const* argv) {
  command_line_result result;
  dde::command_line line("dde-mqs", summary);
  define_options(line, result.cfg);
  auto parsed = line.parse(argc, argv);
  result.help = parsed.what == dde::command_line::outcome::help;
  result.version = parsed.what == dde::command_line::outcome::version;
  if (parsed.what == dde::command_line::outcome::error) result.error = parsed.text;
  if (parsed.what != dde::command_line::outcome::run) return result;
  result.error = check_together(result.cfg);
  if (result.error.empty()) result.error = settle_broker(result.cfg);
  if (result.cfg.broker_ca.empty()) result.cfg.broker_ca = result.cfg.tls.ca_file;
  return result;
}

std::string help_text() {
  config defaults;
  dde::command_line line("dde-mqs", summary);
  define_options(line, defaults);
  return line.usage();
}

std::string version_text() { return std::string("dde-mqs ") + dde::version(); }

}  // namespace dde::mqs
