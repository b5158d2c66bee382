#pragma once
// Whether this registry acts (active) or waits (standby). A registry with no store, or with a store of
// its own (SQLite), is active from its start. On a store several registries share (PostgreSQL), it
// polls the store: it becomes active when it takes the store's lock and steps down when it loses it
// (its connection to the store broke: another registry may lead by now).
// Transport-free and single-threaded: the service calls it on its strand.

#include <chrono>
#include <functional>
#include <string>

#include "state_store.hpp"

namespace dde::registry {

class registry_role {
 public:
  struct hooks {
    /// Took the lead: load the remembered state and serve. A throw steps down (on a shared
    /// store the next poll tries again; otherwise `poll` rethrows).
    std::function<void()> activate;
    /// Lost the lead: stop serving (close the node links, forget what is watched).
    std::function<void(const std::string& why)> step_down;
  };

  /// `store` may be null (nothing remembered): active from the first poll.
  registry_role(state_store* store, hooks h);

  /// Takes the lead or checks it is still held, and calls a hook on a change. Call it at start and,
  /// on a shared store, every --standby-poll-ms.
  void poll();
  bool active() const { return active_; }
  /// Whether `poll` must go on after the start (the store is shared).
  bool polls() const { return store_ && store_->shared(); }
  /// For requests a standby refuses: why it waits and, when known, which registry leads.
  std::string standby_reason() const;
  /// `{"role": "active"|"standby", "store": ..., "leader": ..., "reason": ...}` for /health.
  ordered_json status() const;

 private:
  state_store* store_;
  hooks hooks_;
  bool active_ = false;
  std::string why_ = "not started";
  std::string leader_;
};

}  // namespace dde::registry
