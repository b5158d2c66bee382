#include "dde/registry/registry_config.hpp"

#include <unistd.h>

#include <stdexcept>

#include "dde/core/command_line.hpp"
#include "dde/core/tls_flags.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/ws.hpp"

namespace dde::registry {
namespace {

/// http(s)://<listen address, or the host name when it listens on every address>:<port>.
std::string default_advertise(const registry_config& cfg) {
  std::string host = cfg.listen;
  if (host == "0.0.0.0" || host == "::" || host.empty()) {
    char name[256] = {};
    host = ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
  }
  return (cfg.tls.enabled() ? "https://" : "http://") + net::host_port(host, cfg.port);
}

/// The command line's values that settings take after a check or a lookup.
struct command_line_values {
  std::string admin_token_file, read_token_file, admin_token, read_token, cluster_secret_file;
};

constexpr std::int64_t day_ms = 24ll * 3600 * 1000;

void define_server(CLI::App& app, registry_config& d) {
  app.add_option("--listen", d.listen, "address the HTTP/WebSocket server binds to")->type_name("HOST");
  app.add_option("--port", d.port, "port of the REST API and of the /registry WebSocket (0 picks one)")
      ->type_name("PORT")
      ->check(CLI::Range(0, 65535));
  add_duration(app, "--request-timeout-ms", d.request_timeout, 1, day_ms,
               "a node that has not answered a request after this long gets 504")
      ->type_name("MS");
  add_duration(app, "--heartbeat-ms", d.heartbeat, 0, 3600 * 1000,
               "how often each node is pinged (0: no heartbeat, no failure detection, no failover)")
      ->type_name("MS");
  add_duration(app, "--heartbeat-timeout-ms", d.heartbeat_timeout, 50, day_ms,
               "a node that answers nothing for this long (or is disconnected this long) is lost: its pools "
               "with failover: true are deployed on the other nodes")
      ->type_name("MS");
  app.add_option("--max-body", d.max_body, "largest REST request body in bytes; larger ones get 413")
      ->type_name("BYTES")
      ->check(CLI::Range(1ll, 1ll << 30));
  add_duration(app, "--dashboard-interval-ms", d.dashboard_interval, 100, 3600 * 1000,
               "while a dashboard page is open, nodes and MQSs are asked for their figures this often")
      ->type_name("MS");
}

void define_store(CLI::App& app, registry_config& d) {
  app.add_option("--state-file", d.state_file,
                 "SQLite file where the registry remembers each node and the pools it runs, so that after a "
                 "restart a node that does not come back is still failed over (empty: remember nothing)")
      ->type_name("FILE");
  app.add_option(
         "--state-url", d.state_url,
         "PostgreSQL database (libpq URI, e.g. postgresql://dde@db:5432/dde) that the registries of a "
         "cluster share: one leads and acts, the others stand by (REST answers 503 naming the active "
         "one) and take over within --standby-poll-ms of its end. Instead of --state-file")
      ->type_name("URL");
  add_duration(app, "--standby-poll-ms", d.standby_poll, 50, 3600 * 1000,
               "with --state-url: how often a standby tries to take the lead, and the active registry checks "
               "that it still holds it")
      ->type_name("MS");
  app.add_option("--advertise", d.advertise,
                 "how this registry names itself to the others on a shared store (default: "
                 "http(s)://<host name>:<port>)")
      ->type_name("URL");
  add_duration(app, "--restore-grace-ms", d.restore_grace, 0, day_ms,
               "after a start, how long a node remembered in --state-file has to register again before it is "
               "lost and its failover pools are deployed elsewhere (nodes retry every 5 s at most)")
      ->type_name("MS");
}

void define_access(CLI::App& app, registry_config& d, command_line_values& v) {
  app.add_option(
         "--admin-token-file", v.admin_token_file,
         "file holding the admin bearer token (everything); default $DDE_ADMIN_TOKEN, else none: the API "
         "is open")
      ->type_name("FILE");
  app.add_option("--read-token-file", v.read_token_file,
                 "file holding the read-only bearer token (GET endpoints, /metrics, the dashboard's data); "
                 "default $DDE_READ_TOKEN")
      ->type_name("FILE");
  app.add_option("--admin-token", v.admin_token,
                 "the admin token itself (discouraged: ps shows it; prefer the file)")
      ->type_name("TOKEN");
  app.add_option("--read-token", v.read_token,
                 "the read-only token itself (discouraged: ps shows it; prefer the file)")
      ->type_name("TOKEN");
  app.add_option(
         "--cluster-secret-file", v.cluster_secret_file,
         "file holding the cluster secret that nodes must send on /registry; default $DDE_CLUSTER_SECRET")
      ->type_name("FILE");
  add_tls_flags(app, d.tls, true);
}

void define_options(dde::command_line& line, registry_config& d, command_line_values& v) {
  auto& app = line.app();
  define_server(app, d);
  define_store(app, d);
  define_access(app, d, v);
  add_log_level(app, d.log_level);
  line.accept_config_file("{\"port\": 8000}");
  app.footer("SIGINT or SIGTERM stops the registry. Exit status 2 for a bad command line.");
}

/// Completes the settings once the command line is read; throws std::invalid_argument.
void finish(registry_config& cfg, const command_line_values& v) {
  if (cfg.listen.empty()) throw std::invalid_argument("--listen must not be empty");
  if (!cfg.state_url.empty() && !cfg.state_file.empty())
    throw std::invalid_argument(
        "--state-file and --state-url exclude each other: one store remembers the cluster");
  auto token = [&](const std::string& given, const std::string& file, const char* env) {
    if (!given.empty()) {
      cfg.token_on_command_line = true;
      return given;
    }
    return net::load_secret(file, env);
  };
  cfg.admin_token = token(v.admin_token, v.admin_token_file, "DDE_ADMIN_TOKEN");
  cfg.read_token = token(v.read_token, v.read_token_file, "DDE_READ_TOKEN");
  if (cfg.admin_token.empty() && !cfg.read_token.empty())
    throw std::invalid_argument("a read-only token needs an admin token too (--admin-token-file)");
  cfg.cluster_secret = net::load_secret(v.cluster_secret_file, net::cluster_secret_env);
  apply_tls_flags(cfg.tls, true);
  if (cfg.advertise.empty()) cfg.advertise = default_advertise(cfg);
}

}  // namespace

command_line_result parse_command_line(int argc, const char* const* argv) {
  command_line_result out;
  dde::command_line line(
      "dde-registry",
      "The DDE registry: nodes (their activators) register over WebSocket at ws://HOST:PORT/registry;\n"
      "the REST API (GET /registry/system/list, GET /registry/system/{id}, POST /registry/deploy,\n"
      "POST /registry/system/shutdown, POST /registry/migrate, GET /registry/health) drives them.\n"
      "The dashboard is at http://HOST:PORT/ (live feed: WebSocket /dashboard/live); GET /metrics\n"
      "(Prometheus text format) and GET /health on the same port.");
  command_line_values values;
  define_options(line, out.cfg, values);
  auto parsed = line.parse(argc, argv);
  out.help = parsed.what == dde::command_line::outcome::help;
  out.version = parsed.what == dde::command_line::outcome::version;
  out.help_text = parsed.text + (out.version ? "\n" : "");
  if (parsed.what == dde::command_line::outcome::error) out.error = parsed.text;
  if (parsed.what != dde::command_line::outcome::run) return out;
  try {
    finish(out.cfg, values);
  } catch (const std::invalid_argument& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace dde::registry
