#pragma once
/// \file
/// Authentication shared by the daemons: bearer tokens (registry REST API and dashboard), the
/// cluster secret (WebSocket links between daemons), and the loud warning when a daemon listens
/// beyond loopback unprotected. Secrets never reach a log line.

#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dde/net/ws.hpp"

namespace dde::net {

/// The header that carries the cluster secret on a WebSocket handshake between daemons.
inline constexpr std::string_view cluster_secret_header = "x-dde-cluster-secret";
/// The environment variable that gives a daemon the cluster secret (also how the activator hands it
/// to the isolate systems it spawns: never on argv, where `ps` shows it).
inline constexpr const char* cluster_secret_env = "DDE_CLUSTER_SECRET";

/// Compares two secrets in time that depends on their lengths only, not on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b);

/// The first line of `path` without surrounding blanks; throws std::invalid_argument (naming the file,
/// never its content) when it cannot be read or is empty.
std::string read_secret_file(const std::string& path);

/// A secret from `file` (when not empty), else from the environment variable `env` (when set), else empty.
/// Throws like `read_secret_file`.
std::string load_secret(const std::string& file, const char* env);

/// The token of an `Authorization: Bearer <t>` header, else of a `token` query parameter when
/// `allow_query` (browsers cannot set headers on a WebSocket), else empty.
std::string bearer_token(const http_request& req, bool allow_query = false);

/// Whether `host` (a listen address) is loopback only: 127.x.x.x, ::1 or localhost.
bool is_loopback(std::string_view host);

/// What a daemon's listening socket is protected by, for `warn_if_exposed`.
struct exposure {
  std::string daemon;  ///< e.g. "dde-registry"
  std::string listen;  ///< the bound address
  bool tls = false;    ///< TLS on the listening socket
  bool token = true;   ///< REST/dashboard tokens configured (true where there is no REST API)
  bool secret = true;  ///< cluster secret configured (true where there are no daemon links)
};

/// Logs a loud warning (warn level) when the daemon listens beyond loopback without TLS, without
/// tokens or without a cluster secret; says why it matters. Returns whether it warned.
bool warn_if_exposed(spdlog::logger& log, const exposure& e);

/// An `authorize` hook for `server_options` that refuses WebSocket upgrades on every path but those
/// in `open_paths` without the right cluster secret (401 and a log line on `log`); HTTP requests
/// pass. With an empty `secret` everything passes.
std::function<std::optional<http_response>(const http_request&, bool)> cluster_secret_guard(
    std::string secret, std::shared_ptr<spdlog::logger> log, std::vector<std::string> open_paths = {});

/// Headers that carry `secret` on a client handshake (empty when `secret` is).
std::map<std::string, std::string> cluster_secret_headers(const std::string& secret);

/// Sets this process's cluster secret: one per cluster, so one per process. Call it once at startup,
/// before any thread starts (it is read without a lock afterwards).
void set_cluster_secret(std::string secret);
/// This process's cluster secret (empty: none).
const std::string& cluster_secret();
/// Client options for a link to another daemon: the cluster secret, if any, on the handshake.
client_options cluster_link_options();

/// A JSON error answer `{"error": text}` with `status`.
http_response auth_error(int status, std::string_view text);

}  // namespace dde::net
