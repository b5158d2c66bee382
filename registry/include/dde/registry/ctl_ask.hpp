#pragma once
// `ddectl ask`: one message to a pool through a dde-mqs, as an `ask`, and the reply that comes back.
// It talks to the MQS (the host protocol of mqs/PROTOCOL.md), not to the registry: the way to poke
// a deployed pool from a shell.

#include <chrono>
#include <map>
#include <string>

namespace dde::ctl {

/// What to ask, as parsed from the command line.
struct ask_call {
  std::string mqs;   ///< ws://host:port/mqs ("": the pool's, as the registry knows it)
  std::string to;    ///< the pool, system/isolate
  std::string body;  ///< JSON text
  std::string mode;  ///< at-least-once or at-most-once ("": the pool's, as the registry knows it)
  /// Ask the registry first whether the pool is deployed (and where its MQS is): an unknown pool is an
  /// error, and nothing reaches an MQS (which would declare its queues). --no-registry: false.
  bool check_registry = true;
};

/// The registry ddectl asks, and how.
struct registry_access {
  std::string url;
  std::map<std::string, std::string> headers;  ///< e.g. Authorization
};

/// The registry ddectl talks to. `list` is --registry: one base URL, returned as it is; or a
/// comma-separated list (a registry pair on a shared store), of which the first that answers
/// GET /registry/health with 200 is the active one. When none does, the first that answered at all
/// (a standby: its error then names the active one), else the first of the list.
std::string choose_registry(const std::string& list, const std::map<std::string, std::string>& headers,
                            std::chrono::milliseconds timeout);

/// How an ask ended. `status` is ddectl's exit status: 0 a reply came (`text`: its JSON body,
/// indented, or its raw bytes), 1 the MQS refused the message or no reply came in time, 3 the MQS
/// cannot be reached (`text`: why, for both).
struct ask_outcome {
  int status = 0;
  std::string text;
};

/// Finds `call.to` among the pools of the nodes the registry knows and fills in its MQS and delivery
/// mode where the call left them empty. Status 0: found; 1: no node runs it, or the registry
/// answered an error, or --mode contradicts the pool; 3: the registry cannot be reached.
ask_outcome resolve_pool(ask_call& call, const registry_access& registry, std::chrono::milliseconds timeout);

/// Connects to the MQS, sends the message with a fresh reply queue and waits up to `timeout`.
ask_outcome run_ask(const ask_call& call, std::chrono::milliseconds timeout);

}  // namespace dde::ctl
