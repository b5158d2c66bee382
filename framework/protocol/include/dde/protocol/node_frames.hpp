#pragma once
/// \file
/// The registry <-> bootstrapper WebSocket protocol (registry/PROTOCOL.md): every frame as a struct
/// with one encoder and one decoder. The registry and the activator's bootstrapper both use these.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dde/protocol/result.hpp"

namespace dde::protocol {

/// JSON that keeps the order of its keys: what nodes answer is relayed in the order they gave it,
/// and the registry's own answers read like the thesis's samples.
using ordered_json = nlohmann::ordered_json;

/// The protocol version both ends speak; a node announcing another one is refused.
constexpr int node_protocol_version = 1;

/// True for a bootstrapperId: 1 to 18 decimal digits.
bool valid_bootstrapper_id(std::string_view id);

// --- bootstrapper -> registry ---

/// A node's first frame.
struct register_frame {
  std::optional<std::string> previous_id;  ///< the id it had before, to get back if free
  std::string host;                        ///< where its activator listens; empty = the peer's address
  std::uint16_t port = 0;                  ///< its activator's port
  std::string name;                        ///< a label for people (may be empty)
  bool tls = false;                        ///< its activator listens with TLS (wss://)
  int protocol = node_protocol_version;
};
std::string encode(const register_frame& f);
/// Reads a register frame, with a precise error for each bad field (and for another protocol version).
result<register_frame> parse_register(const ordered_json& frame);

/// The answer to one request, on the registry's link (ordered JSON: relayed as the node gave it) and
/// on the activator's /control link (plain JSON).
template <class Json>
struct basic_response_frame {
  std::uint64_t id = 0;
  bool ok = false;
  Json result;        ///< when ok
  int status = 500;   ///< when not ok: the HTTP status to answer (400..599)
  std::string error;  ///< when not ok
};
using response_frame = basic_response_frame<ordered_json>;
template <class Json>
std::string encode(const basic_response_frame<Json>& f);
/// Reads a response frame; a status outside 400..599 becomes 500, a missing error reads "the node
/// failed without saying why".
template <class Json>
result<basic_response_frame<Json>> parse_response(const Json& frame);

// --- registry -> bootstrapper ---

struct registered_frame {
  std::string bootstrapper_id;
};
std::string encode(const registered_frame& f);

/// `{"type": "error", "error": ...}`, either way.
struct error_frame {
  std::string error;
};
std::string encode(const error_frame& f);

/// The requests the registry sends a node (registry/PROTOCOL.md, "Requests").
namespace node {
struct deploy {
  ordered_json body;  ///< the POST /registry/deploy body
};
struct shutdown {
  std::string system;
  std::optional<std::string> isolate;  ///< absent: the whole isolate system
};
/// The pools a describe covers, per isolate system: the named pools, or with no name every pool of
/// that system.
using describe_scope = std::map<std::string, std::set<std::string>>;
/// What the node runs: every isolate system, or with `only` those pools (absent ones are not in the
/// answer: the registry reads a named pool or system missing from it as gone).
struct describe {
  std::optional<describe_scope> only;
};
struct ping {};
struct restart {
  std::string system, isolate;
};
struct kill {
  std::string system, isolate;
  std::optional<std::string> worker_id;  ///< absent: every worker of the pool
};
struct set_rate {
  std::string system, isolate;
  ordered_json rate;           ///< {"messages", "perMs"}, null, or absent (discarded: leave as is)
  ordered_json max_in_flight;  ///< a count, null, or absent (discarded: leave as is)
};
struct migrate {
  std::string system, isolate;
  std::vector<std::string> workers_paths;
};
/// Replaces a running pool's spec with `body` (a deploy body naming the same system and pool): its
/// workers finish what they hold, the new spec starts; if it fails, the old spec runs again.
struct redeploy {
  ordered_json body;
};
}  // namespace node

using node_request = std::variant<node::deploy, node::shutdown, node::describe, node::ping, node::restart,
                                  node::kill, node::set_rate, node::migrate, node::redeploy>;

/// The `action` of a request: "deploy", "shutdown", "describe", "ping", "restart", "kill", "setRate",
/// "migrate" or "redeploy".
std::string_view action_of(const node_request& r);

struct request_frame {
  std::uint64_t id = 0;
  node_request request;
};
std::string encode(const request_frame& f);

/// A request frame (`type` already read as "request") decoded, or why not: the request's id (when
/// it has a usable one, to answer with) and the error.
struct bad_request {
  std::uint64_t id = 0;
  std::string error;
};
std::variant<request_frame, bad_request> parse_request(const ordered_json& frame);

/// What the node reads of a frame from the registry.
using registry_frame = std::variant<registered_frame, request_frame, bad_request, error_frame>;
/// Decodes any frame the registry sends; an error for one that is not JSON, has no known `type`,
/// or whose fields are wrong.
result<registry_frame> parse_registry_frame(std::string_view text);

}  // namespace dde::protocol
