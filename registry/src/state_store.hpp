#pragma once
// What the registry remembers across its own restarts: each node it watched and the pools that node
// ran (their specs, rates and placement; not their counters). Without it a node lost while the
// registry is down would never be failed over: a restarted registry knew only the nodes that came
// back. The registry loads it at start, waits a grace period for each remembered node to register
// again, and fails over the pools of those that do not (node_watch).
//
// One writer: the registry's strand. A node's row is written only when what it runs changed (a
// deploy, a new rate, a failover): a few writes a minute on a busy cluster.
//
// Two kinds: a SQLite file (--state-file), one registry's own; and a PostgreSQL database
// (--state-url) that several registries share for high availability. On a shared store one registry
// leads (holds the store's lock) and acts; the others stand by and take over when it goes.

#include <memory>
#include <string>
#include <vector>

#include "node_table.hpp"

namespace dde::registry {

struct remembered_node {
  node_info info;
  ordered_json pools = ordered_json::object();  ///< its describe, trimmed to the pools' specs
};

/// Whether this registry may act on the store, from `state_store::lead`.
struct lead_result {
  bool leading = false;
  std::string why;     ///< not leading: why (another registry leads; the store is unreachable: ...)
  std::string leader;  ///< not leading: the registry that leads, as it named itself ("": unknown)
};

class state_store {
 public:
  virtual ~state_store() = default;
  /// Where the state is, for logs and errors ("state file /var/lib/dde/registry.db").
  virtual std::string name() const = 0;
  /// Whether several registries may share this store (one leads; the others stand by).
  virtual bool shared() const { return false; }
  /// Takes the lead, or checks that this registry still holds it (called every --standby-poll-ms on a
  /// shared store). A store of one registry always grants it. Never throws: a store it cannot reach
  /// is `leading = false` with the reason.
  virtual lead_result lead() { return {true, {}, {}}; }
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

/// The PostgreSQL store at `url` (a libpq connection URI or key=value string), shared by the
/// registries of one cluster; `self` is how this registry names itself to the others (its REST URL).
/// Connects lazily: `lead` reports a store it cannot reach.
std::unique_ptr<state_store> open_postgres_store(const std::string& url, const std::string& self);

/// A remembered node's row, as both stores keep it: `info` (name, ip, port, activator) and `pools`
/// as JSON text. `decode_node` throws std::runtime_error naming `store` when a row is not JSON.
struct node_row {
  std::string id, info, pools;
};
node_row encode_node(const remembered_node& node);
remembered_node decode_node(const node_row& row, const std::string& store);

/// A node's describe trimmed to what failover needs and what changes only when the pools change:
/// per pool its id, workerUri, workersCount, MQS and spec fields (no counters, workers or states).
ordered_json remembered_pools(const ordered_json& describe);

}  // namespace dde::registry
