#pragma once
// How a pool's message ends at the broker: acked, given back to its queue, dead-lettered by the
// broker (supervision.deadLetter), copied to a delay queue for a later retry (retry.delays), or, a
// poison message, copied to dde.dead.<queue> and acked. At-most-once messages have nothing to settle.
// Runs on the router's strand.

#include <cstdint>
#include <functional>
#include <string>

#include "dde/message.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "deliveries.hpp"
#include "governance.hpp"
#include "mqs_link.hpp"
#include "pool_figures.hpp"
#include "supervisor.hpp"

namespace dde::host {

class settlement {
 public:
  /// Wraps a callback that another thread calls later: the wrapped one runs it on the router's
  /// strand, or drops it when the router is gone by then.
  using confirm_fn = std::function<void(bool confirmed)>;
  using guard_fn = std::function<confirm_fn(confirm_fn)>;
  /// `version`: the md5 of the version running now, named in the dead letters of what it failed.
  settlement(const pool_spec& spec, mqs_link& link, pool_figures& figures, governance& governance,
             poison_filter& poison, guard_fn guard, std::function<std::string()> version);

  /// Every worker has finished `d`: acked; when a worker failed it, retried later (retry.delays) or
  /// given back to the queue (whose delivery limit dead-letters a poison message), or straight to
  /// dde.dead.<queue> (supervision.deadLetter). A canary's failure always goes back to the queue: a
  /// bad version on trial costs no message a retry.
  void settle(const delivery& d);
  /// A first-reply-wins message answered before its last copy ended: acked now.
  void answered(const delivery& d);
  /// A redelivered message that failed supervision.maxFailures times goes to dde.dead.<queue> and is
  /// acked: true. False: it is handled as any other.
  bool dead_letter_poison(std::uint64_t generation, std::uint64_t tag, const message& m);
  /// A message no worker took goes back to its queue (the pool stops).
  void give_back(std::uint64_t generation, std::uint64_t tag);

 private:
  bool at_least_once() const { return spec_.mode == delivery_mode::at_least_once; }
  /// The original is acked only once the broker has the retry's copy; refused, it goes back.
  void retry_later(const delivery& d);

  const pool_spec& spec_;
  mqs_link& link_;
  pool_figures& figures_;
  governance& governance_;
  poison_filter& poison_;
  guard_fn guard_;
  std::function<std::string()> version_;
};

}  // namespace dde::host
