#pragma once
// `ddectl ask`: one message to a pool through a dde-mqs, as an `ask`, and the reply that comes back.
// It talks to the MQS (the host protocol of mqs/PROTOCOL.md), not to the registry: the way to poke
// a deployed pool from a shell.

#include <chrono>
#include <string>

namespace dde::ctl {

/// What to ask, as parsed from the command line.
struct ask_call {
  std::string mqs;   ///< ws://host:port/mqs
  std::string to;    ///< the pool, system/isolate
  std::string body;  ///< JSON text
  std::string mode;  ///< at-least-once or at-most-once: how the pool's queue is declared if new
};

/// How an ask ended. `status` is ddectl's exit status: 0 a reply came (`text`: its JSON body,
/// indented, or its raw bytes), 1 the MQS refused the message or no reply came in time, 3 the MQS
/// cannot be reached (`text`: why, for both).
struct ask_outcome {
  int status = 0;
  std::string text;
};

/// Connects to the MQS, sends the message with a fresh reply queue and waits up to `timeout`.
ask_outcome run_ask(const ask_call& call, std::chrono::milliseconds timeout);

}  // namespace dde::ctl
