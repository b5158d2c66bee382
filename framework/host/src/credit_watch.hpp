#pragma once
// The isolate system's delivery watchdog over its MQS link (dde/core/stall_watch.hpp). Per pool topic it
// keeps the credit out at the MQS (pulled on this link and not yet used by a delivery) and the last
// delivery. A pool whose credit is out and that got nothing for the limit is suspect: the MQS is
// asked the depth of its queue. Messages ready, still nothing delivered: stalled. A question the
// MQS leaves unanswered for a whole limit counts as ready messages (the link itself stopped). The
// top level then moves to a fresh link. No clock and no I/O here: the top level drives it.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "dde/core/stall_watch.hpp"

namespace dde::host {

class credit_watch {
 public:
  using clock = std::chrono::steady_clock;
  /// `limit` 0: never suspect anything.
  explicit credit_watch(clock::duration limit) : watch_(limit) {}

  bool enabled() const { return watch_.limit() != clock::duration::zero(); }
  /// A new link to an MQS: no credit is out there, no question either.
  void linked(clock::time_point now);
  /// `credit` more for `topic` went to the MQS.
  void pulled(const std::string& topic, std::uint64_t credit, clock::time_point now);
  void delivered(const std::string& topic, clock::time_point now);
  /// The pool stopped pulling `topic`.
  void cancelled(const std::string& topic);

  /// Once a second: the topics to ask the MQS the depth of, and the stalls found because a question
  /// stayed unanswered for a whole limit.
  struct sweep_result {
    std::vector<std::string> ask;
    std::vector<std::string> stalled;
  };
  sweep_result sweep(clock::time_point now);
  /// The MQS's answer about `topic` (an `error` means it could not say: no stall). True when the
  /// topic is stalled: the caller logs it and moves to a fresh link.
  bool answer(const std::string& topic, std::uint64_t ready, bool error, clock::time_point now);

  /// Credit out for `topic` now.
  std::uint64_t credit(const std::string& topic) const;
  /// The stalled topics for /health ("a.b for 12000 ms"); empty when none.
  std::string report(clock::time_point now) const { return watch_.report(now); }
  /// Stalls found so far, by topic.
  const std::map<std::string, std::uint64_t>& stalls() const { return stalls_; }

 private:
  struct pool_state {
    std::uint64_t credit = 0;
    clock::time_point last_traffic{};
  };
  bool record(const std::string& topic, std::uint64_t ready, clock::time_point now);

  stall_watch watch_;
  std::unordered_map<std::string, pool_state> topics_;
  std::map<std::string, clock::time_point> asked_;  ///< questions out, since when
  std::map<std::string, std::uint64_t> stalls_;
};

}  // namespace dde::host
