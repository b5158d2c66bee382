#pragma once
// Runs `POST /registry/apply`: describes every connected node, plans (apply_plan) and carries out the
// steps one after another. Every desired pool gets a line in the answer, with what was done and how
// it ended; a failed step does not stop the others. Nothing is done when a node cannot describe
// itself (its pools are unknown) or in a dry run.

#include "apply_plan.hpp"
#include "node_table.hpp"
#include "rest_api.hpp"

namespace dde::registry {

/// Applies `req`; `reply` runs once: 200 `{"dryRun", "pools": [{"pool", "node", "action", "changed",
/// "result"|"error"}], "summary": {...}}`, or with any step failed the status of the first failure, the
/// same body and an `error` that names each failed pool.
void apply_pools(node_table& nodes, apply_request req, reply_fn reply);

}  // namespace dde::registry
