#pragma once
// `POST /registry/apply` (ddectl apply -f): the cluster's desired pools in one body, compared with what
// the nodes describe. This file is the pure part: reading the body and planning the steps that make
// the cluster match, so that tests check every decision without a node. Running the plan is
// pool_applier's.
//
// A pool is known by its address system/isolate. The fields a desired pool gives are the ones apply
// manages: a field the file leaves out keeps whatever the running pool has (as kubectl's apply leaves
// fields it was not given), so applying the same file twice changes nothing.

#include <map>
#include <string>
#include <vector>

#include "rest_validation.hpp"

namespace dde::registry {

/// The body of `POST /registry/apply`: `[deploy body, ...]` or `{"pools": [...], "dryRun": bool}`.
struct apply_request {
  std::vector<deploy_request> pools;  ///< in the body's order; no address twice
  bool dry_run = false;
};
result<apply_request> parse_apply(const ordered_json& body);

/// A pool as a node's `describe` shows it.
struct described_pool {
  std::string node;    ///< the node's bootstrapperId
  std::string system;  ///< the isolate system it was listed under
  ordered_json entry;
};
/// Every pool the nodes described, by address "system/isolate" (`describes`: node id -> describe).
std::map<std::string, std::vector<described_pool>> pools_by_address(
    const std::map<std::string, ordered_json>& describes);

enum class apply_action {
  create,     ///< deploy: no node runs the pool
  unchanged,  ///< it runs where the file says, as the file says
  configure,  ///< only its rate/maxInFlight differ: set at once, workers keep running
  redeploy,   ///< other fields differ: the node replaces its spec (the old runs again if the new fails)
  move,       ///< it runs on another node: deployed where the file says, then shut down there
};
std::string_view to_string(apply_action a);

/// One step of a plan.
struct apply_step {
  apply_action action = apply_action::unchanged;
  std::string pool;                  ///< system/isolate
  std::string node;                  ///< where the file wants it (bootstrapperId)
  std::string from;                  ///< move: the node it runs on now
  std::vector<std::string> changed;  ///< the fields that differ (configure, redeploy, move)
  ordered_json
      body;  ///< create, redeploy, move: the deploy body to send; configure: {"rate"?, "maxInFlight"?}
};

/// The steps that make the described cluster match `desired`, one per desired pool, in its order.
/// `desired[i].bootstrapper_id` must already be a node id (not a name).
std::vector<apply_step> plan_apply(const std::vector<deploy_request>& desired,
                                   const std::map<std::string, std::vector<described_pool>>& running);

}  // namespace dde::registry
