#pragma once
// The verdict on a canary (canary hot deployment): the messages the new version and the old one
// finished and failed since the canary began, and, once its window passed and enough messages went to
// the canary, whether it takes the whole pool or is rolled back. Plain logic over explicit time
// points: the pool (host/hot_swap) swaps the workers; unit-tested directly.

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "dde/protocol/pool_spec.hpp"

namespace dde::host {

/// Messages one plugin version finished (`handled`) and failed (thrown on, or given back unfinished).
struct version_counts {
  std::uint64_t handled = 0, failed = 0;
  std::uint64_t total() const { return handled + failed; }
  double failure_rate() const { return total() ? double(failed) / double(total()) : 0.0; }
};
nlohmann::json to_json(const version_counts& c);

class canary_judge {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  /// A canary begins at `started`. `old_before`: what the old version did in the pool before, its
  /// baseline if no old worker finishes a message during the window (a one-worker pool).
  canary_judge(canary_spec spec, time_point started, version_counts old_before);

  /// A message (or a raced copy) ended on a worker of the new version (`canary`) or of the old one.
  void count(bool canary, bool failed) {
    auto& c = canary ? canary_ : old_;
    ++(failed ? c.failed : c.handled);
  }

  enum class verdict { wait, promote, roll_back };
  /// Wait until the window passed and min_messages went to the canary; then promote, or roll back
  /// when the canary's failure rate exceeds the baseline's by more than max_increase.
  verdict judge(time_point now) const;
  /// The two failure rates and the threshold, as a sentence (the reason of a verdict).
  std::string explain() const;

  time_point window_end() const { return started_ + spec_.window; }
  const version_counts& canary() const { return canary_; }
  /// The old version's figures the canary is compared with: its own during the window, else before it.
  const version_counts& baseline() const { return old_.total() > 0 ? old_ : old_before_; }
  /// The verdict's inputs for describe: counts, rates, window end (ms from `now`), threshold.
  nlohmann::json describe(time_point now) const;

 private:
  canary_spec spec_;
  time_point started_;
  version_counts old_before_;
  version_counts canary_, old_;
};

}  // namespace dde::host
