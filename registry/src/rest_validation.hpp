#pragma once
// Reads and checks the bodies of the REST API (thesis 3.2.2 plus DDE's additions) before anything
// is sent to a node: every error names the field and what is wrong with it (answered as 400).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dde/protocol/node_frames.hpp"
#include "dde/protocol/pool_spec.hpp"

namespace dde::registry {

using protocol::ordered_json;

/// The only deploy action of the thesis.
inline constexpr std::string_view add_isolate_action = "action.addIsolate";

/// Parses a request body: "body is not valid JSON: ..." or "body must be a JSON object" (or array,
/// with `arrays_too`).
result<ordered_json> parse_body(std::string_view text, bool arrays_too = false);

/// `POST /registry/deploy`.
struct deploy_request {
  std::string bootstrapper_id;
  std::string mqs;      ///< messageQueuingSystemServer
  dde::pool_spec spec;  ///< the pool, checked with the isolate systems' own parser
  ordered_json body;    ///< forwarded to the node as given
};
result<deploy_request> parse_deploy(const ordered_json& body);

/// `POST /registry/system/shutdown`: one pool, or the whole isolate system without `isolateName`.
struct shutdown_request {
  std::string bootstrapper_id;
  std::string system;
  std::optional<std::string> isolate;
};
result<shutdown_request> parse_shutdown(const ordered_json& body);

/// `POST /registry/system/kill`: one worker of a pool (`workerId`), or every worker without it.
struct kill_request {
  std::string bootstrapper_id;
  std::string system;
  std::string isolate;
  std::optional<std::string> worker_id;
};
result<kill_request> parse_kill(const ordered_json& body);

/// `POST /registry/migrate`: new `workersPaths` on the same node, and/or another node.
struct migrate_request {
  std::string bootstrapper_id;
  std::string system;
  std::string isolate;
  std::optional<std::vector<std::string>> workers_paths;
  std::optional<std::string> to_bootstrapper_id;
};
result<migrate_request> parse_migrate(const ordered_json& body);

}  // namespace dde::registry
