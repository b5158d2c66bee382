#include "access_control.hpp"

#include "dde/net/auth.hpp"
#include "dde/net/target.hpp"
#include "web_assets.hpp"

namespace dde::registry {

role required_role(const std::string& method, const std::string& path, bool websocket) {
  if (websocket) return path == "/registry" ? role::open : role::read;  // /registry: the cluster secret
  bool reading = method == "GET" || method == "HEAD";
  if (reading && path == "/health") return role::open;
  // The page and its script ask for the token; they hold no data themselves.
  if (reading && path != "/metrics" && find_web_asset(path == "/" ? "/index.html" : path)) return role::open;
  return reading ? role::read : role::admin;
}

std::function<std::optional<net::http_response>(const net::http_request&, bool)> make_access_guard(
    access_tokens tokens, std::shared_ptr<spdlog::logger> log) {
  auto links = net::cluster_secret_guard(tokens.cluster_secret, log);
  return [tokens = std::move(tokens), log = std::move(log), links = std::move(links)](
             const net::http_request& req, bool websocket) -> std::optional<net::http_response> {
    const std::string path(net::target_path(req.target));
    if (websocket && path == "/registry") return links(req, websocket);
    if (tokens.admin.empty()) return std::nullopt;
    auto needed = required_role(req.method, path, websocket);
    if (needed == role::open) return std::nullopt;
    // Browsers cannot set headers on a WebSocket: the live feed also takes ?token=.
    auto given = net::bearer_token(req, websocket);
    if (!given.empty() && net::constant_time_equal(given, tokens.admin)) return std::nullopt;
    bool is_read = !given.empty() && !tokens.read.empty() && net::constant_time_equal(given, tokens.read);
    if (is_read && needed == role::read) return std::nullopt;
    if (is_read) {
      log->warn("refused {} {} from {}: the read-only token may not do this (403)", req.method, path,
                req.remote);
      return net::auth_error(403,
                             req.method + " " + path + " needs the admin token; this token is read-only");
    }
    log->warn("refused {} {} from {}: {} bearer token (401)", req.method, path, req.remote,
              given.empty() ? "no" : "wrong");
    return net::auth_error(401, given.empty() ? "this registry needs a token: Authorization: Bearer <token>"
                                              : "the token is not valid here");
  };
}

}  // namespace dde::registry
