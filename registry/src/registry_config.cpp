#include "registry_config.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "dde/net/auth.hpp"
#include "dde/net/ws.hpp"
#include "dde/tls_flags.hpp"

namespace dde::registry {
namespace {

/// Feeds the keys of a JSON config file to `c` as defaults; an error or empty.
std::string apply_config_file(cli& c, const std::string& path) {
  std::ifstream in(path);
  if (!in) return "cannot read config file " + path;
  std::stringstream text;
  text << in.rdbuf();
  auto json = nlohmann::json::parse(text.str(), nullptr, false);
  if (json.is_discarded()) return "config file " + path + " is not valid JSON";
  if (!json.is_object()) return "config file " + path + " must hold a JSON object";
  for (auto& [key, value] : json.items()) {
    if (key == "config" || key == "help")
      return "config file " + path + ": key \"" + key + "\" is not allowed";
    std::string as_text;
    if (value.is_string())
      as_text = value.get<std::string>();
    else if (value.is_number_integer())
      as_text = std::to_string(value.get<long long>());
    else if (value.is_boolean())
      as_text = value.get<bool>() ? "true" : "false";
    else
      return "config file " + path + ": \"" + key + "\" must be a string, a whole number or true/false";
    try {
      c.set_default(key, as_text);
    } catch (const std::out_of_range&) {
      return "config file " + path + ": unknown key \"" + key + "\"";
    } catch (const std::invalid_argument& e) {
      return "config file " + path + ": " + e.what();
    }
  }
  return {};
}

/// http(s)://<listen address, or the host name when it listens on every address>:<port>.
std::string default_advertise(const registry_config& cfg) {
  std::string host = cfg.listen;
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
  }
  return (cfg.tls.enabled() ? "https://" : "http://") + net::host_port(host, cfg.port);
}

}  // namespace

cli make_cli() {
  registry_config d;
  cli c("dde-registry",
        "The DDE registry: nodes (their activators) register over WebSocket at ws://HOST:PORT/registry;\n"
        "the REST API (GET /registry/system/list, GET /registry/system/{id}, POST /registry/deploy,\n"
        "POST /registry/system/shutdown, POST /registry/migrate, GET /registry/health) drives them.\n"
        "The dashboard is at http://HOST:PORT/ (live feed: WebSocket /dashboard/live); GET /metrics\n"
        "(Prometheus text format) and GET /health on the same port.");
  c.option("listen", d.listen, "address the HTTP/WebSocket server binds to")
      .option("port", std::to_string(d.port),
              "port of the REST API and of the /registry WebSocket (0 picks one)")
      .option("request-timeout-ms", std::to_string(d.request_timeout.count()),
              "a node that has not answered a request after this long gets 504")
      .option("heartbeat-ms", std::to_string(d.heartbeat.count()),
              "how often each node is pinged (0: no heartbeat, no failure detection, no failover)")
      .option("heartbeat-timeout-ms", std::to_string(d.heartbeat_timeout.count()),
              "a node that answers nothing for this long (or is disconnected this long) is lost: its pools "
              "with failover: true are deployed on the other nodes")
      .option("state-file", d.state_file,
              "SQLite file where the registry remembers each node and the pools it runs, so that after a "
              "restart a node that does not come back is still failed over (empty: remember nothing)",
              "FILE")
      .option("state-url", d.state_url,
              "PostgreSQL database (libpq URI, e.g. postgresql://dde@db:5432/dde) that the registries of a "
              "cluster share: one leads and acts, the others stand by (REST answers 503 naming the active "
              "one) and take over within --standby-poll-ms of its end. Instead of --state-file",
              "URL")
      .option("standby-poll-ms", std::to_string(d.standby_poll.count()),
              "with --state-url: how often a standby tries to take the lead, and the active registry checks "
              "that it still holds it")
      .option("advertise", "",
              "how this registry names itself to the others on a shared store (default: "
              "http(s)://<host name>:<port>)",
              "URL")
      .option("restore-grace-ms", std::to_string(d.restore_grace.count()),
              "after a start, how long a node remembered in --state-file has to register again before it is "
              "lost and its failover pools are deployed elsewhere (nodes retry every 5 s at most)")
      .option("max-body", std::to_string(d.max_body),
              "largest REST request body in bytes; larger ones get 413")
      .option("dashboard-interval-ms", std::to_string(d.dashboard_interval.count()),
              "while a dashboard page is open, nodes and MQSs are asked for their figures this often")
      .option(
          "admin-token-file", "",
          "file holding the admin bearer token (everything); default $DDE_ADMIN_TOKEN, else none: the API "
          "is open")
      .option(
          "read-token-file", "",
          "file holding the read-only bearer token (GET endpoints, /metrics, the dashboard's data); default "
          "$DDE_READ_TOKEN")
      .option("admin-token", "", "the admin token itself (discouraged: ps shows it; prefer the file)")
      .option("read-token", "", "the read-only token itself (discouraged: ps shows it; prefer the file)")
      .option(
          "cluster-secret-file", "",
          "file holding the cluster secret that nodes must send on /registry; default $DDE_CLUSTER_SECRET")
      .option("log-level", d.log_level, "trace, debug, info, warn, error or off")
      .option("config", "", "JSON object with the same keys (e.g. {\"port\": 8000}); flags override it");
  add_tls_flags(c, true);
  return c;
}

command_line parse_command_line(int argc, char** argv) {
  command_line out;
  auto c = make_cli();
  out.help_text =
      c.usage() + "\nSIGINT or SIGTERM stops the registry. Exit status 2 for a bad command line.\n";
  if (auto err = c.parse(argc, argv)) {
    out.error = *err;
    return out;
  }
  if (c.help_requested()) {
    out.help = true;
    return out;
  }
  if (c.version_requested()) {
    out.version = true;
    out.help_text = c.version_line() + "\n";
    return out;
  }
  if (!c.get("config").empty()) {
    if (auto err = apply_config_file(c, c.get("config")); !err.empty()) {
      out.error = err;
      return out;
    }
  }
  try {
    out.cfg.listen = c.get("listen");
    if (out.cfg.listen.empty()) throw std::invalid_argument("--listen must not be empty");
    out.cfg.port = static_cast<std::uint16_t>(c.get_int("port", 0, 65535));
    out.cfg.request_timeout =
        std::chrono::milliseconds(c.get_int("request-timeout-ms", 1, 24ll * 3600 * 1000));
    out.cfg.max_body = static_cast<std::size_t>(c.get_int("max-body", 1, 1ll << 30));
    out.cfg.dashboard_interval = std::chrono::milliseconds(c.get_int("dashboard-interval-ms", 100, 3600 * 1000));
    out.cfg.heartbeat = std::chrono::milliseconds(c.get_int("heartbeat-ms", 0, 3600 * 1000));
    out.cfg.heartbeat_timeout = std::chrono::milliseconds(c.get_int("heartbeat-timeout-ms", 50, 24ll * 3600 * 1000));
    out.cfg.state_file = c.get("state-file");
    out.cfg.restore_grace = std::chrono::milliseconds(c.get_int("restore-grace-ms", 0, 24ll * 3600 * 1000));
    out.cfg.state_url = c.get("state-url");
    if (!out.cfg.state_url.empty() && !out.cfg.state_file.empty())
      throw std::invalid_argument("--state-file and --state-url exclude each other: one store remembers the cluster");
    out.cfg.standby_poll = std::chrono::milliseconds(c.get_int("standby-poll-ms", 50, 3600 * 1000));
    out.cfg.advertise = c.get("advertise");
    out.cfg.log_level = c.get("log-level");
    bool known = false;
    for (const char* level : {"trace", "debug", "info", "warn", "error", "critical", "off"})
      known = known || out.cfg.log_level == level;
    if (!known) throw std::invalid_argument("--log-level: unknown level \"" + out.cfg.log_level + "\"");
    auto token = [&](const char* flag, const char* file, const char* env) {
      if (!c.get(flag).empty()) {
        out.cfg.token_on_command_line = true;
        return c.get(flag);
      }
      return net::load_secret(c.get(file), env);
    };
    out.cfg.admin_token = token("admin-token", "admin-token-file", "DDE_ADMIN_TOKEN");
    out.cfg.read_token = token("read-token", "read-token-file", "DDE_READ_TOKEN");
    if (out.cfg.admin_token.empty() && !out.cfg.read_token.empty())
      throw std::invalid_argument("a read-only token needs an admin token too (--admin-token-file)");
    out.cfg.cluster_secret = net::load_secret(c.get("cluster-secret-file"), net::cluster_secret_env);
    out.cfg.tls = apply_tls_flags(c);
    if (out.cfg.advertise.empty()) out.cfg.advertise = default_advertise(out.cfg);
  } catch (const std::invalid_argument& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace dde::registry
