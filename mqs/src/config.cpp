#include "dde/mqs/config.hpp"

#include <charconv>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

#include "dde/cli.hpp"
#include "dde/daemon.hpp"

namespace dde::mqs {
namespace {

using setter = std::function<std::string(config&, const std::string&)>;

struct option {
  const char* name;
  const char* value_name;
  const char* help;
  std::string (*default_text)(const config&);
  setter set;
};

std::string parse_unsigned(const std::string& text, std::uint64_t min, std::uint64_t max,
                           std::uint64_t& out) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    return "\"" + text + "\" is not a whole number";
  if (v < min || v > max)
    return std::to_string(v) + " is out of range " + std::to_string(min) + ".." + std::to_string(max);
  out = v;
  return {};
}

template <class T>
setter number(T config::*member, std::uint64_t min, std::uint64_t max) {
  return [=](config& c, const std::string& text) {
    std::uint64_t v = 0;
    auto err = parse_unsigned(text, min, max, v);
    if (err.empty()) c.*member = static_cast<T>(v);
    return err;
  };
}

/// A file name inside `config` (may be empty: the default, none).
setter file(std::string& (*field)(config&)) {
  return [=](config& c, const std::string& value) -> std::string {
    field(c) = value;
    return {};
  };
}

/// A boolean: given alone (`--name`) it is true; `--name=false` or `"name": false` in a file is false.
setter boolean(bool& (*field)(config&)) {
  return [=](config& c, const std::string& value) -> std::string {
    if (value != "true" && value != "false") return "\"" + value + "\" is neither true nor false";
    field(c) = value == "true";
    return {};
  };
}

std::string no_file(const config&) { return "none"; }

setter text(std::string config::*member, bool allow_empty = false) {
  return [=](config& c, const std::string& value) -> std::string {
    if (value.empty() && !allow_empty) return "must not be empty";
    c.*member = value;
    return {};
  };
}

const std::vector<option>& options() {
  constexpr std::uint64_t u16 = 65535;
  static const std::vector<option> all = {
      {"listen", "HOST", "address the WebSocket server binds to", [](const config& c) { return c.listen; },
       text(&config::listen)},
      {"port", "PORT", "WebSocket port (0 picks a free one); the endpoint is ws://HOST:PORT/mqs",
       [](const config& c) { return std::to_string(c.port); }, number(&config::port, 0, u16)},
      {"broker-host", "HOST", "RabbitMQ host", [](const config& c) { return c.broker_host; },
       text(&config::broker_host)},
      {"broker-port", "PORT", "RabbitMQ AMQP port",
       [](const config& c) { return std::to_string(c.broker_port); }, number(&config::broker_port, 1, u16)},
      {"user", "NAME", "RabbitMQ user", [](const config& c) { return c.user; }, text(&config::user)},
      {"password", "SECRET", "RabbitMQ password (never logged)",
       [](const config&) { return std::string("guest"); }, text(&config::password, true)},
      {"vhost", "VHOST", "RabbitMQ virtual host", [](const config& c) { return c.vhost; },
       text(&config::vhost)},
      {"prefetch", "N", "basic.qos prefetch of each topic's consumer: unacknowledged messages it may hold",
       [](const config& c) { return std::to_string(c.prefetch); }, number(&config::prefetch, 1, u16)},
      {"idle-timeout-ms", "MS",
       "a topic's dequeuer closes after this long with no pull, no credit and nothing unacknowledged",
       [](const config& c) { return std::to_string(c.idle_timeout.count()); },
       [](config& c, const std::string& v) {
         std::uint64_t ms = 0;
         auto err = parse_unsigned(v, 1, 24ull * 3600 * 1000, ms);
         if (err.empty()) c.idle_timeout = std::chrono::milliseconds(ms);
         return err;
       }},
      {"lease-ms", "MS",
       "renew a delivery held this long (a long job, or one waiting for credit) before the broker's "
       "consumer_timeout takes it back; keep it below that timeout (RabbitMQ's default: 30 min). 0: never",
       [](const config& c) { return std::to_string(c.lease.count()); },
       [](config& c, const std::string& v) {
         std::uint64_t ms = 0;
         auto err = parse_unsigned(v, 0, 24ull * 3600 * 1000, ms);
         if (err.empty() && ms != 0 && ms < 100) err = "must be 0 (never) or at least 100";
         if (err.empty()) c.lease = std::chrono::milliseconds(ms);
         return err;
       }},
      {"confirm-window", "N", "at-least-once messages published and not yet confirmed by the broker, at most",
       [](const config& c) { return std::to_string(c.confirm_window); },
       number(&config::confirm_window, 1, 1000000)},
      {"max-message", "BYTES", "largest record body (message) accepted; larger ones get an error record",
       [](const config& c) { return std::to_string(c.max_message); },
       number(&config::max_message, 1, std::numeric_limits<std::uint32_t>::max())},
      {"max-frame", "BYTES", "largest WebSocket message; a larger one closes that connection with 1009",
       [](const config& c) { return std::to_string(c.max_frame); },
       number(&config::max_frame, 1024, std::numeric_limits<std::uint32_t>::max())},
      {"backlog-messages", "N",
       "enqueued messages not yet published/confirmed above which clients stop being read (backpressure)",
       [](const config& c) { return std::to_string(c.backlog_messages); },
       number(&config::backlog_messages, 1, 100000000)},
      {"backlog-bytes", "BYTES", "the same limit in bytes of message bodies",
       [](const config& c) { return std::to_string(c.backlog_bytes); },
       number(&config::backlog_bytes, 1024, std::numeric_limits<std::uint64_t>::max() / 2)},
      {"heartbeat", "SECONDS", "AMQP heartbeat asked of the broker (0 disables)",
       [](const config& c) { return std::to_string(c.heartbeat_s); }, number(&config::heartbeat_s, 0, u16)},
      {"threads", "N", "threads running the WebSocket side, the dequeuer and the enqueuer: the first always, the others while it lags",
       [](const config& c) { return std::to_string(c.threads); }, number(&config::threads, 1, 64)},
      {"thread-lag-us", "US",
       "a thread beyond the first joins while a probe waits this long to run or the first is 90% busy "
       "(0: every thread runs all the time)",
       [](const config& c) { return std::to_string(c.thread_lag.count()); },
       [](config& c, const std::string& v) {
         std::uint64_t us = 0;
         auto err = parse_unsigned(v, 0, 10ull * 1000 * 1000, us);
         if (err.empty()) c.thread_lag = std::chrono::microseconds(us);
         return err;
       }},
      {"dequeuer-thread", nullptr,
       "run the dequeuer's loop on a thread of its own (woken through an eventfd) rather than on the io_context",
       [](const config&) { return std::string("off"); }, boolean([](config& c) -> bool& { return c.dequeuer_thread; })},
      {"enqueuer-thread", nullptr,
       "run the enqueuer's loop on a thread of its own (woken through an eventfd) rather than on the io_context "
       "(always so with --broker-tls)",
       [](const config&) { return std::string("off"); }, boolean([](config& c) -> bool& { return c.enqueuer_thread; })},
      {"scheduling", "POLICY", dde::scheduling_help, [](const config& c) { return c.scheduling; },
       [](config& c, const std::string& v) -> std::string {
         if (auto err = dde::check_scheduling(v)) return *err;
         c.scheduling = v;
         return {};
       }},
      {"tls-cert", "FILE", "PEM certificate (chain): serve wss/https instead of ws/http", no_file,
       file([](config& c) -> std::string& { return c.tls.cert_file; })},
      {"tls-key", "FILE", "PEM private key of --tls-cert", no_file,
       file([](config& c) -> std::string& { return c.tls.key_file; })},
      {"tls-ca", "FILE", "PEM CA certificate(s) client certificates (and by default the broker's) must chain to",
       no_file, file([](config& c) -> std::string& { return c.tls.ca_file; })},
      {"tls-verify-client", nullptr, "refuse clients without a certificate signed by --tls-ca",
       [](const config&) { return std::string("off"); },
       boolean([](config& c) -> bool& { return c.tls.verify_client; })},
      {"broker-tls", nullptr, "amqps: TLS to RabbitMQ, its certificate verified (give --broker-port, e.g. 5671)",
       [](const config&) { return std::string("off"); }, boolean([](config& c) -> bool& { return c.broker_tls; })},
      {"broker-ca", "FILE", "PEM CA the broker's certificate must chain to (default: --tls-ca)", no_file,
       file([](config& c) -> std::string& { return c.broker_ca; })},
      {"broker-cert", "FILE", "PEM client certificate presented to the broker", no_file,
       file([](config& c) -> std::string& { return c.broker_cert; })},
      {"broker-key", "FILE", "PEM private key of --broker-cert", no_file,
       file([](config& c) -> std::string& { return c.broker_key; })},
      {"cluster-secret-file", "FILE",
       "file holding the cluster secret that hosts must send (else $DDE_CLUSTER_SECRET; none: links are "
       "open)",
       [](const config& c) {
         return c.cluster_secret_file.empty() ? std::string("none") : c.cluster_secret_file;
       },
       text(&config::cluster_secret_file)},
      {"log-level", "LEVEL", "trace, debug, info, warn, error or off",
       [](const config& c) { return c.log_level; },
       [](config& c, const std::string& v) -> std::string {
         for (const char* l : {"trace", "debug", "info", "warn", "error", "critical", "off"})
           if (v == l) {
             c.log_level = v;
             return {};
           }
         return "unknown level \"" + v + "\"";
       }},
  };
  return all;
}

const option* find_option(std::string_view name) {
  for (auto& o : options())
    if (name == o.name) return &o;
  return nullptr;
}

std::string load_config_file(config& cfg, const std::string& path) {
  std::ifstream in(path);
  if (!in) return "cannot read config file " + path;
  std::stringstream ss;
  ss << in.rdbuf();
  auto json = nlohmann::json::parse(ss.str(), nullptr, false);
  if (json.is_discarded()) return "config file " + path + " is not valid JSON";
  auto err = apply_json(cfg, json);
  return err.empty() ? err : "config file " + path + ": " + err;
}

}  // namespace

std::string apply_json(config& cfg, const nlohmann::json& json) {
  if (!json.is_object()) return "expected a JSON object";
  for (auto& [key, value] : json.items()) {
    const option* o = find_option(key);
    if (!o) return "unknown key \"" + key + "\"";
    std::string text;
    if (value.is_string())
      text = value.get<std::string>();
    else if (value.is_number_unsigned())
      text = std::to_string(value.get<std::uint64_t>());
    else if (value.is_boolean() && !o->value_name)
      text = value.get<bool>() ? "true" : "false";
    else
      return "\"" + key + "\" must be a string or a non-negative whole number";
    if (auto err = o->set(cfg, text); !err.empty()) return "\"" + key + "\": " + err;
  }
  return {};
}

namespace {

constexpr const char* summary =
    "The message-queuing system of DDE. Isolate-system hosts connect over WebSocket\n"
    "(ws://HOST:PORT/mqs, protocol in mqs/PROTOCOL.md); messages go to and come from RabbitMQ.";

/// The options as the shared parser (dde::cli) knows them: its help layout, errors and --version.
cli make_cli() {
  config defaults;
  cli c("dde-mqs", summary);
  for (auto& o : options()) {
    if (o.value_name)
      c.option(o.name, o.default_text(defaults), o.help, o.value_name);
    else
      c.flag(o.name, o.help);
  }
  c.option("config", "", "JSON object with the same keys (e.g. {\"port\": 42043, \"prefetch\": 8}); flags override it",
           "FILE");
  return c;
}

}  // namespace

command_line parse_command_line(int argc, const char* const* argv) {
  command_line result;
  auto c = make_cli();
  if (auto err = c.parse(argc, const_cast<char**>(argv))) {
    result.error = *err;
    return result;
  }
  result.help = c.help_requested();
  result.version = c.version_requested();
  if (result.help || result.version) return result;
  if (c.is_set("config")) {
    if (auto err = load_config_file(result.cfg, c.get("config")); !err.empty()) {
      result.error = err;
      return result;
    }
  }
  for (auto& o : options()) {
    if (!c.is_set(o.name)) continue;
    if (auto err = o.set(result.cfg, c.get(o.name)); !err.empty()) {
      result.error = "--" + std::string(o.name) + ": " + err;
      return result;
    }
  }
  auto& cfg = result.cfg;
  if (cfg.max_message + 64 * 1024 + 8 > cfg.max_frame)
    result.error = "--max-message must leave room for a header within --max-frame";
  else if (cfg.tls.cert_file.empty() != cfg.tls.key_file.empty())
    result.error = "--tls-cert and --tls-key go together";
  else if (cfg.tls.verify_client && (cfg.tls.cert_file.empty() || cfg.tls.ca_file.empty()))
    result.error = "--tls-verify-client needs --tls-cert, --tls-key and --tls-ca";
  else if (cfg.broker_cert.empty() != cfg.broker_key.empty())
    result.error = "--broker-cert and --broker-key go together";
  if (cfg.broker_ca.empty()) cfg.broker_ca = cfg.tls.ca_file;
  return result;
}

std::string help_text() {
  return make_cli().usage() + "\nSIGINT or SIGTERM stops the MQS cleanly. Exit status 2 for a bad command line.\n";
}

std::string version_text() { return make_cli().version_line(); }

}  // namespace dde::mqs
