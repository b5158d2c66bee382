#pragma once
/// \file
/// The `/control` link between an isolate-system host and its node's activator (activator/PROTOCOL.md):
/// every frame as a struct with one encoder and one decoder, used by both ends.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "dde/protocol/node_frames.hpp"
#include "dde/protocol/result.hpp"

namespace dde::protocol {

constexpr int control_protocol_version = 1;

// --- host -> activator ---

/// The host's first frame, and the first after every reconnect.
struct control_hello {
  std::string system;
  std::string instance;
  long long pid = -1;  ///< -1: not told
  std::string mqs;
  std::uint16_t ops_port = 0;  ///< its /metrics and /health port (0: none)
  int protocol = control_protocol_version;
};
std::string encode(const control_hello& f);

/// A plugin event of one pool ("pluginSwapping", "pluginGood", ...), with what the host tells of it.
struct control_event {
  nlohmann::json fields;  ///< an object: "event", "isolateName", "md5", ...
};
std::string encode(const control_event& f);

/// The host's answer to a request: the same shape as a node's (node_frames.hpp), in plain JSON.
using control_response = basic_response_frame<nlohmann::json>;

// --- activator -> host ---

namespace control {
struct add_isolate {
  nlohmann::json spec;  ///< the pool spec (a deploy body); the host parses it with parse_pool_spec
  /// A fresh deploy: refused unless the system's MQS link is up within this long ("mqsLinkTimeoutMs").
  /// Absent for a redeploy after a restart, which waits for the MQS however long it takes.
  std::optional<std::uint32_t> link_timeout_ms;
};
struct remove_isolate {
  std::string isolate;
};
struct restart_isolate {
  std::string isolate;
};
struct kill_isolate {
  std::string isolate;
  std::optional<std::string> worker_id;  ///< absent: every worker; never empty
};
struct set_rate {
  std::string isolate;
  nlohmann::json rate;           ///< as in a deploy body; discarded when absent
  nlohmann::json max_in_flight;  ///< as in a deploy body; discarded when absent
};
/// The system's pools as they run: every pool, or only `isolates` (those it runs).
struct describe {
  std::set<std::string> isolates;  ///< empty: every pool
};
struct shutdown {};
}  // namespace control

using control_request =
    std::variant<control::add_isolate, control::remove_isolate, control::restart_isolate,
                 control::kill_isolate, control::set_rate, control::describe, control::shutdown>;

/// "addIsolate", "removeIsolate", "restartIsolate", "killIsolate", "setRate", "describe" or "shutdown".
std::string_view action_of(const control_request& r);

struct control_request_frame {
  std::uint64_t id = 0;
  control_request request;
};
std::string encode(const control_request_frame& f);

/// What the host reads of a frame from its activator: a request, or one it cannot do with the id to
/// answer (a bad_request), or why the frame is not a request at all.
result<std::variant<control_request_frame, bad_request>> parse_control_request(std::string_view text);

/// What the activator reads of a frame from a host.
using host_frame = std::variant<control_hello, control_event, control_response>;
result<host_frame> parse_host_frame(std::string_view text);

}  // namespace dde::protocol
