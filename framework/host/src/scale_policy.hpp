#pragma once
// Autoscaling by queue depth: from a sample of the pool's backlog (ready messages in its queue at
// the broker), how many workers the pool should have. Plain logic, no timers: unit-tested directly.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "dde/protocol/pool_spec.hpp"

namespace dde::host {

class scale_policy {
 public:
  using clock = std::chrono::steady_clock;
  explicit scale_policy(scale_spec spec) : spec_(spec) {}

  struct change {
    std::size_t to;
    std::string reason;
  };
  /// A sample: `backlog` messages wait in the queue, the pool has `workers` (of which `idle` hold
  /// nothing). A change to make now, or none. Grows while the backlog per worker stays above the
  /// target (two samples in a row), up to double per step and never above max; shrinks by its idle
  /// workers, never below min or what the backlog needs, once the backlog was low for the cool-down
  /// and nothing changed within it. Below min it grows to min at once.
  std::optional<change> sample(clock::time_point now, std::uint64_t backlog, std::size_t workers,
                               std::size_t idle);
  /// A change was made (or the pool was deployed) at `now`.
  void changed(clock::time_point now);
  const scale_spec& spec() const { return spec_; }

 private:
  scale_spec spec_;
  bool above_ = false;  ///< the previous sample was above the target
  std::optional<clock::time_point> low_since_;
  clock::time_point last_change_{};
};

}  // namespace dde::host
