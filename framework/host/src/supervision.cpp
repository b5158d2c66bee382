#include "supervision.hpp"

namespace dde::host {
namespace {

/// Failed messages that go back to the queue are counted; raced copies and at-most-once ones are not.
/// A pool with retry delays counts failures in the message itself (the envelope's `attempt`).
int poison_limit(const pool_spec& spec) {
  bool requeues = spec.mode == delivery_mode::at_least_once && !spec.supervision.dead_letter &&
                  !spec.retry.enabled() && !first_reply_wins(spec.router);
  return requeues ? spec.supervision.max_failures : 0;
}

}  // namespace

supervision::supervision(const pool_spec& spec)
    : spec_(spec), supervisor_(spec.supervision), poison_(poison_limit(spec)) {}

supervisor::decision supervision::on_crash(bool canary, supervisor::time_point now) {
  if (!canary) return supervisor_.on_failure(now);
  auto kind = spec_.supervision.kind;
  bool restart = kind == strategy::restart || kind == strategy::escalate;
  return {restart ? supervisor::action::restart_worker : supervisor::action::resume,
          spec_.supervision.backoff};
}

}  // namespace dde::host
