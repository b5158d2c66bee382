#pragma once
// The settings of dde-registry: defaults, the command line and a JSON --config file
// (dde/core/command_line.hpp).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dde/net/tls.hpp"

namespace dde::registry {

/// Every setting of the registry; the defaults are those of `dde-registry --help`.
struct registry_config {
  std::string listen = "127.0.0.1";
  std::uint16_t port = 8000;
  std::chrono::milliseconds request_timeout{15000};   ///< how long a node may take to answer
  std::size_t max_body = 1024 * 1024;                 ///< larger REST bodies get 413
  std::chrono::milliseconds heartbeat{1000};          ///< how often each node is pinged (0: off)
  std::chrono::milliseconds heartbeat_timeout{3000};  ///< a node silent this long is lost (failover)
  std::string state_file;  ///< SQLite file remembering nodes and their pools across restarts ("": none)
  std::string state_url;   ///< PostgreSQL store shared by the registries of a cluster ("": none)
  std::chrono::milliseconds standby_poll{
      1000};              ///< on a shared store: how often the lock is tried or checked
  std::string advertise;  ///< how this registry names itself to the others (default http(s)://host:port)
  std::chrono::milliseconds restore_grace{
      15000};  ///< a remembered node not back this long after a start is lost
  std::string log_level = "info";
  std::chrono::milliseconds dashboard_interval{1000};  ///< how often an open dashboard is refreshed
  std::string admin_token;             ///< bearer token for everything (empty: the API is open)
  std::string read_token;              ///< bearer token for GET endpoints, /metrics and the live feed
  std::string cluster_secret;          ///< required of nodes on /registry (empty: open)
  bool token_on_command_line = false;  ///< --admin-token/--read-token given: `ps` shows it
  net::tls_options tls;  ///< https/wss when tls.cert_file is set (--tls-cert, --tls-key, --tls-ca, ...)
};

/// What the command line asked for.
struct command_line_result {
  registry_config cfg;
  bool help = false;
  std::string help_text;  ///< with `help`: the usage; with `version`: the version line
  bool version = false;
  std::string error;  ///< empty when the command line was valid
};

/// Parses `argv`; a `--config FILE` (a JSON object keyed by option names) is applied first and the
/// flags given on the command line override it.
command_line_result parse_command_line(int argc, const char* const* argv);

}  // namespace dde::registry
