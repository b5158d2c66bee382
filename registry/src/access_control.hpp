#pragma once
// Who may do what on the registry's port: bearer tokens for the REST API and the dashboard's data
// (admin: everything; read: GET endpoints, /metrics and the live feed), the cluster secret for the
// nodes' /registry link. /health and the dashboard's static files stay open: they hold no data.

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dde/net/ws.hpp"

namespace dde::registry {

struct access_tokens {
  std::string admin;           ///< empty: no tokens at all, the API is open
  std::string read;            ///< empty: only the admin token reads
  std::string cluster_secret;  ///< empty: /registry links are open
};

/// The role a request needs: none (open), read, or admin.
enum class role { open, read, admin };

/// The role `method` on `path` (an upgrade when `websocket`) needs.
role required_role(const std::string& method, const std::string& path, bool websocket);

/// The `server_options::authorize` hook of the registry. Refusals answer 401 (no or a wrong
/// token, with `WWW-Authenticate: Bearer`) or 403 (the read token on an admin action) and log one
/// line on `log` with the peer, the method and the path; never the token.
std::function<std::optional<net::http_response>(const net::http_request&, bool)> make_access_guard(
    access_tokens tokens, std::shared_ptr<spdlog::logger> log);

}  // namespace dde::registry
