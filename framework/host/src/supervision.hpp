#pragma once
// A pool's supervision as one component: the supervisor's strategy and restart budget, the rule that
// a canary's failures are judged by its verdict (they neither escalate nor spend the budget, and do
// not make a message poison), and the failures counted per message that make a redelivered one
// poison. The router carries out the decisions on its slots.

#include "dde/protocol/pool_spec.hpp"
#include "supervisor.hpp"

namespace dde::host {

class supervision {
 public:
  explicit supervision(const pool_spec& spec);

  /// A worker threw at `now`; `canary`: on a slot that tries a new version.
  supervisor::decision on_crash(bool canary, supervisor::time_point now);
  /// A RESTART of the stopped pool: a fresh restart budget.
  void reset() { supervisor_ = supervisor(spec_.supervision); }
  /// Why the pool stopped (stopped_state, stop_reason).
  const supervisor& verdict() const { return supervisor_; }

  /// Failed messages of the pool are counted per message (see poison_filter).
  poison_filter& poison() { return poison_; }
  const poison_filter& poison() const { return poison_; }

 private:
  const pool_spec& spec_;
  supervisor supervisor_;
  poison_filter poison_;
};

}  // namespace dde::host
