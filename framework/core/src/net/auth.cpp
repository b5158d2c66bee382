#include "dde/net/auth.hpp"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dde/net/target.hpp"

namespace dde::net {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer one is looked at whatever the contents: the time tells the lengths only.
  std::size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

std::string read_secret_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read secret file " + path);
  std::string line;
  std::getline(in, line);
  auto secret = std::string(trim(line));
  if (secret.empty()) throw std::invalid_argument("secret file " + path + " is empty");
  return secret;
}

std::string load_secret(const std::string& file, const char* env) {
  if (!file.empty()) return read_secret_file(file);
  if (const char* value = env ? std::getenv(env) : nullptr) return std::string(trim(value));
  return {};
}

std::string bearer_token(const http_request& req, bool allow_query) {
  if (auto it = req.headers.find("authorization"); it != req.headers.end()) {
    std::string_view v = trim(it->second);
    constexpr std::string_view scheme = "bearer ";
    if (v.size() > scheme.size()) {
      std::string head(v.substr(0, scheme.size()));
      for (auto& c : head) c = char(std::tolower(static_cast<unsigned char>(c)));
      if (head == scheme) return std::string(trim(v.substr(scheme.size())));
    }
  }
  if (!allow_query) return {};
  return query_param(req.target, "token").value_or(std::string());
}

bool is_loopback(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

bool warn_if_exposed(spdlog::logger& log, const exposure& e) {
  if (is_loopback(e.listen)) return false;
  std::string missing;
  auto add = [&](const char* what) { missing += missing.empty() ? what : std::string(", ") + what; };
  if (!e.tls) add("TLS");
  if (!e.token) add("API tokens (--admin-token-file)");
  if (!e.secret) add("a cluster secret (--cluster-secret-file)");
  if (missing.empty()) return false;
  log.warn(
      "SECURITY WARNING: {} listens on {} (beyond loopback) without {}. DDE daemons deploy and run native "
      "code: anyone who can reach this port may be able to run code on this cluster or read its traffic. "
      "Bind to 127.0.0.1, or configure what is missing.",
      e.daemon, e.listen, missing);
  return true;
}

http_response auth_error(int status, std::string_view text) {
  http_response r;
  r.status = status;
  r.body = nlohmann::json{{"error", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (status == 401) r.headers["WWW-Authenticate"] = "Bearer";
  return r;
}

std::function<std::optional<http_response>(const http_request&, bool)> cluster_secret_guard(
    std::string secret, std::shared_ptr<spdlog::logger> log, std::vector<std::string> open_paths) {
  return [secret = std::move(secret), log = std::move(log), open_paths = std::move(open_paths)](
             const http_request& req, bool upgrade) -> std::optional<http_response> {
    if (secret.empty() || !upgrade) return std::nullopt;
    auto path = target_path(req.target);
    for (auto& open : open_paths)
      if (path == open) return std::nullopt;
    auto it = req.headers.find(std::string(cluster_secret_header));
    if (it != req.headers.end() && constant_time_equal(it->second, secret)) return std::nullopt;
    log->warn("refused a WebSocket link from {} to {}: {} cluster secret", req.remote, path,
              it == req.headers.end() ? "no" : "wrong");
    return auth_error(401, "this link needs the cluster secret (header X-DDE-Cluster-Secret)");
  };
}

namespace {
std::string& process_secret() {
  static std::string secret;
  return secret;
}
}  // namespace

void set_cluster_secret(std::string secret) { process_secret() = std::move(secret); }

const std::string& cluster_secret() { return process_secret(); }

client_options cluster_link_options() {
  client_options o;
  o.headers = cluster_secret_headers(cluster_secret());
  return o;
}

std::map<std::string, std::string> cluster_secret_headers(const std::string& secret) {
  if (secret.empty()) return {};
  return {{"X-DDE-Cluster-Secret", secret}};
}

}  // namespace dde::net
