#pragma once
// Moves a pool from one node to another: describe it on the source, deploy the same spec on the
// target, then shut it down on the source. If the deploy fails, nothing is shut down.

#include "node_table.hpp"
#include "rest_api.hpp"
#include "rest_validation.hpp"

namespace dde::registry {

/// Builds the deploy body that recreates pool `system/isolate` on node `target` from one entry of
/// a node's `describe` answer (thesis shape plus `messageQueuingSystemServer` and DDE's fields).
result<ordered_json> redeploy_body(const ordered_json& entry, const std::string& system,
                                   const std::string& target);

/// Runs the move asked by `req` (which has a `to_bootstrapper_id`); `reply` runs once with
/// `{"from", "to", "deploy": <result>, "shutdown": <result>}` or the first error.
void move_pool(node_table& nodes, const migrate_request& req, reply_fn reply);

}  // namespace dde::registry
