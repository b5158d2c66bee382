#pragma once
// The round trips of the asks a pool's workers send, in the isolate system that asks: each timed from
// its sending to its reply or its timeout, per asked pool, as dde_host_ask_seconds{pool} and
// dde_host_ask_timeouts_total{pool}. Owns the pending asks (ask_tracker), their series and the timer
// of the oldest one's timeout; runs on the router's strand with the router's clock.

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "ask_tracker.hpp"
#include "clock.hpp"
#include "dde/core/metrics.hpp"

namespace dde::host {

class asks {
 public:
  /// `pool`'s own series exist (at 0) from the start; an ask unanswered for `timeout` times out.
  asks(host::clock& clock, const strand_type& strand, const std::string& pool,
       std::chrono::milliseconds timeout);

  /// Ask `id` to `asked` (topic form) went out at `at`.
  void sent(const std::string& id, const std::string& asked, clock::time_point at);
  /// A reply came: the round trip of the ask it answers, if it is a pending one.
  void replied(const std::string& in_reply_to);
  /// The pool stops: no timer any more (pending asks are left as they are).
  void stop();
  std::size_t pending() const { return tracker_.pending(); }

 private:
  struct series {
    metric_histogram* seconds;
    metric_cell* timeouts;
  };
  /// The figures of asks to `asked` (created at 0 on first use).
  series& series_of(const std::string& asked);
  /// Waits for the oldest pending ask's timeout (nothing when none is pending or the pool stopped).
  void arm();
  /// Ends the asks that timed out, and waits for the next one to.
  void expire();

  host::clock& clock_;
  strand_type strand_;
  ask_tracker tracker_;
  std::unordered_map<std::string, series> series_;
  std::unique_ptr<timer> timer_;  ///< made on first use: most pools never ask
  bool armed_ = false;
  bool stopped_ = false;
};

}  // namespace dde::host
