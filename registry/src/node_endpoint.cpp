#include "node_endpoint.hpp"

#include "dde/log.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/node_frames.hpp"

namespace dde::registry {
namespace {

std::shared_ptr<spdlog::logger> registry_log() { return logger("registry"); }

/// Splits "ip:port" (IPv6 addresses contain colons: the port follows the last one).
std::pair<std::string, std::string> split_remote(const std::string& remote) {
  auto colon = remote.rfind(':');
  if (colon == std::string::npos) return {remote, ""};
  return {remote.substr(0, colon), remote.substr(colon + 1)};
}

std::string frame_type(const ordered_json& frame) {
  auto it = frame.find("type");
  return it != frame.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

node_endpoint::node_endpoint(node_table& nodes) : nodes_(nodes) {}

void node_endpoint::on_open(std::uint64_t conn, const std::string& remote, std::shared_ptr<node_link> link) {
  registry_log()->debug("connection {} from {} opened", conn, remote);
  connections_[conn] = {remote, std::move(link)};
}

void node_endpoint::on_text(std::uint64_t conn, const std::string& text) {
  auto it = connections_.find(conn);
  if (it == connections_.end()) return;
  auto& c = it->second;
  auto frame = ordered_json::parse(text, nullptr, false);
  auto id = nodes_.id_of(conn);
  if (frame.is_discarded() || !frame.is_object()) {
    registry_log()->warn("{} from {} sent a frame that is not a JSON object",
                         id ? "node " + *id : "connection", c.remote);
    c.link->send(protocol::encode(protocol::error_frame{"frame is not a JSON object"}));
    if (!id) c.link->close("register first");
    return;
  }
  if (!id) return on_register(conn, c, frame);
  on_frame(conn, c, *id, frame);
}

void node_endpoint::on_binary(std::uint64_t conn) {
  auto it = connections_.find(conn);
  if (it == connections_.end()) return;
  it->second.link->send(protocol::encode(
      protocol::error_frame{"binary frames are not part of the registry protocol; send JSON text"}));
}

void node_endpoint::on_register(std::uint64_t conn, connection& c, const ordered_json& frame) {
  auto parsed = protocol::parse_register(frame);
  if (!parsed) {
    registry_log()->warn("refused registration from {}: {}", c.remote, parsed.error());
    c.link->send(protocol::encode(protocol::error_frame{parsed.error()}));
    c.link->close("registration refused");
    return;
  }
  const auto& reg = parsed.value();
  auto [ip, port] = split_remote(c.remote);
  node_info info;
  info.ip = ip;
  info.port = port;
  info.name = reg.name;
  // A node listening on every interface says so; it is reachable where its connection came from.
  bool any = reg.host.empty() || reg.host == "0.0.0.0" || reg.host == "::";
  info.activator = std::string(reg.tls ? "wss://" : "ws://") + net::host_port(any ? ip : reg.host, reg.port) +
                   "/activator";
  info.connected_at = std::chrono::system_clock::now();
  auto id = nodes_.add(conn, c.link, std::move(info), reg.previous_id);
  c.link->send(protocol::encode(protocol::registered_frame{id}));
  if (reg.previous_id && *reg.previous_id != id)
    registry_log()->info(
        "node {} registered from {} (name \"{}\", activator {}); its previous id {} is taken", id, c.remote,
        reg.name, nodes_.find(id)->activator, *reg.previous_id);
  else
    registry_log()->info("node {} registered from {} (name \"{}\", activator {}{})", id, c.remote, reg.name,
                         nodes_.find(id)->activator, reg.previous_id ? ", previous id kept" : "");
}

void node_endpoint::on_frame(std::uint64_t conn, connection& c, const std::string& id,
                             const ordered_json& frame) {
  auto type = frame_type(frame);
  if (type == "response") {
    auto response = protocol::parse_response(frame);
    if (!response) {
      registry_log()->warn("node {} sent a bad response: {}", id, response.error());
      c.link->send(protocol::encode(protocol::error_frame{response.error()}));
      return;
    }
    if (auto unmatched = nodes_.on_response(conn, std::move(response.value())))
      registry_log()->warn("node {}: {}", id, *unmatched);
    return;
  }
  if (type == "event") {
    registry_log()->info("node {} reports {}", id, frame.dump());
    return;
  }
  if (type == "register") {
    c.link->send(
        protocol::encode(protocol::error_frame{"this connection is already registered as node " + id}));
    return;
  }
  registry_log()->warn("node {} sent a frame of unknown type \"{}\"", id, type);
  c.link->send(protocol::encode(
      protocol::error_frame{"unknown frame type \"" + type + "\"; expected response or event"}));
}

void node_endpoint::close_all(const std::string& reason) {
  for (auto& [conn, c] : connections_) c.link->close(reason);
}

void node_endpoint::on_close(std::uint64_t conn, const std::string& reason) {
  connections_.erase(conn);
  std::size_t failed = 0;
  auto id = nodes_.remove(conn, &failed);
  if (id)
    registry_log()->info("node {} disconnected ({}); {} request(s) in flight failed", *id, reason, failed);
  else
    registry_log()->debug("connection {} closed before registering ({})", conn, reason);
}

}  // namespace dde::registry
