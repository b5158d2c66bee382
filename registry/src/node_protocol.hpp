#pragma once
// JSON codecs of the registry <-> bootstrapper WebSocket protocol (registry/PROTOCOL.md).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "host/plugin_loader.hpp"  // host::result

namespace dde::registry {

using host::result;

/// JSON that keeps the order of its keys: what nodes answer is relayed in the order they gave it,
/// and the registry's own answers read like the thesis's samples.
using ordered_json = nlohmann::ordered_json;

/// The protocol version the registry speaks; a node announcing another one is refused.
constexpr int protocol_version = 1;

/// True for a bootstrapperId: 1 to 18 decimal digits.
bool valid_bootstrapper_id(std::string_view id);

/// A node's first frame.
struct register_frame {
  std::optional<std::string> previous_id;  ///< the id it had before, to get back if free
  std::string host;                        ///< where its activator listens; empty = the peer's address
  std::uint16_t port = 0;                  ///< its activator's port
  std::string name;                        ///< a label for people (may be empty)
  bool tls = false;                        ///< its activator listens with TLS (wss://)
};

/// Reads a register frame, with a precise error for each bad field.
result<register_frame> parse_register(const ordered_json& frame);

/// A node's answer to one request.
struct response_frame {
  std::uint64_t id = 0;
  bool ok = false;
  ordered_json result;  ///< when ok
  int status = 500;     ///< when not ok: the HTTP status the registry answers (400..599)
  std::string error;    ///< when not ok
};

/// Reads a response frame; a status outside 400..599 becomes 500.
result<response_frame> parse_response(const ordered_json& frame);

std::string registered_frame(const std::string& bootstrapper_id);
std::string error_frame(std::string_view message);
/// `{"type": "request", "id": id, "action": action, ...fields}`.
std::string request_frame(std::uint64_t id, std::string_view action, const ordered_json& fields);

}  // namespace dde::registry
