#pragma once
// Which of the dequeuer's consuming links a turn of its loop visits. Each topic has a connection of
// its own, so an MQS may hold thousands; idle, their heartbeats alone wake the loop some seventy
// times a second at 1,000 topics, and a turn that looked at every link each time (to read it, to
// see whether it failed, to watch its socket) cost the idle MQS most of a tenth of a core. So a turn
// visits every link only when the set of links or their sessions may have changed (a topic started
// or stopped, a link opened or lost, the main connection made or lost, the once-a-second sweep, a
// link failed anywhere); otherwise it reads only the links that have something to read and looks
// again only at those.
//
// The rule that keeps this exact: after each turn, every link whose `readable` is set is on the
// ready list, and a link's `readable` goes from unset to set only through ready() (or in a turn that
// visits every link). Pointers on the list stay valid between turns: a link is only destroyed in a
// turn that visits every link, and such a turn drops the list unread.

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "broker_link.hpp"

namespace dde::mqs {

class link_walk {
 public:
  using clock = std::chrono::steady_clock;

  /// The links or their sessions may have changed this turn: it visits every link.
  void everything() { all_ = true; }
  bool all() const { return all_ || failures_ != failures_seen_; }

  /// `link`'s socket became readable, or rabbitmq-c holds bytes of it: the next turn reads it.
  void ready(broker_link& link) {
    if (link.readable) return;  // on the list already
    link.readable = true;
    ready_.push_back(&link);
  }
  /// After a turn's look at `link`: still to be read (bytes buffered, a socket not watched), it is
  /// listed for the next turn.
  void keep(broker_link& link) {
    if (link.readable) ready_.push_back(&link);
  }
  /// The links this turn reads, when it does not visit every link (else nothing: they are all read).
  /// They stay what the turn looked at until turned().
  const std::vector<broker_link*>& take_ready() {
    reading_.swap(ready_);
    ready_.clear();
    if (all()) reading_.clear();
    return reading_;
  }
  /// What the turn read from its list (empty when it visited every link).
  const std::vector<broker_link*>& read() const { return reading_; }

  /// Counts a failed link, wherever it failed (broker_link::fail): the next look visits every link.
  std::uint64_t* failure_counter() { return &failures_; }

  /// The first time a topic waiting without a link may plan one (max: none waits); kept from the
  /// last turn that visited every link, the only turns that change it.
  clock::time_point retry_due() const { return retry_due_; }
  void set_retry_due(clock::time_point at) { retry_due_ = at; }

  /// The turn is over: the next visits every link only if something asks it to.
  void turned() {
    all_ = false;
    failures_seen_ = failures_;
    reading_.clear();
  }

 private:
  bool all_ = true;  // the first turn connects
  std::vector<broker_link*> ready_;
  std::vector<broker_link*> reading_;
  std::uint64_t failures_ = 0;
  std::uint64_t failures_seen_ = 0;
  clock::time_point retry_due_ = clock::time_point::max();
};

}  // namespace dde::mqs
