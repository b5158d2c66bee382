#pragma once
// What the registry remembers across its own restarts: each node it watched and the pools that node
// ran (their specs, rates and placement; not their counters). Without it a node lost while the
// registry is down would never be failed over: a restarted registry knew only the nodes that came
// back. The registry loads it at start, waits a grace period for each remembered node to register
// again, and fails over the pools of those that do not (node_watch).
//
// One writer: the registry's strand. The SQLite store writes a node's row only when what it runs
// changed (a deploy, a new rate, a failover), in WAL mode: a few writes a minute on a busy cluster.

#include <memory>
#include <string>
#include <vector>

#include "node_table.hpp"

namespace dde::registry {

struct remembered_node {
  node_info info;
  ordered_json pools = ordered_json::object();  ///< its describe, trimmed to the pools' specs
};

class state_store {
 public:
  virtual ~state_store() = default;
  /// Every remembered node.
  virtual std::vector<remembered_node> load() = 0;
  /// Remembers `node` (replacing what was remembered under its id).
  virtual void save(const remembered_node& node) = 0;
  /// Forgets node `id` (lost, its pools failed over).
  virtual void forget(const std::string& id) = 0;
};

/// The SQLite store in file `path` (created with its folder's permissions when missing); throws
/// std::runtime_error naming the file and SQLite's reason when it cannot be opened or read.
std::unique_ptr<state_store> open_sqlite_store(const std::string& path);

/// A node's describe trimmed to what failover needs and what changes only when the pools change:
/// per pool its id, workerUri, workersCount, MQS and spec fields (no counters, workers or states).
ordered_json remembered_pools(const ordered_json& describe);

}  // namespace dde::registry
