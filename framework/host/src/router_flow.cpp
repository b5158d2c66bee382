// The message flow through a router: credit asked of the MQS, deliveries taken and handed to the
// workers its routing policy picks (a batch's share of each worker in one hop), and each message
// finished once its workers are done: acked, retried later or failed, its room given back, more
// credit asked. Then the replies to the workers' asks, and what the workers report besides:
// failures, crashes, rate limits, silence.
#include <algorithm>
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "router.hpp"

namespace dde::host {

void router::request_credit() {
  // While a burst of done reports is being finished, the credit they free is asked once at its end:
  // asked after the first, it would go as a pull of 1 (nothing being outstanding, the ledger asks
  // for whatever room there is), and the MQS would hand over a batch of one.
  if (lifecycle_.stopping() || flow_.reports.finishing()) return;
  std::size_t n = flow_.ledger.take_credit_request();
  if (n > 0) top_->pull(pool_.topic, pool_.spec.mode, n, flow_.ledger.consumers());
}

void router::deliver_reply(envelope e) {
  boost::asio::defer(strand_, [self = shared_from_this(), e = std::move(e)]() mutable {
    self->asks_.replied(e.in_reply_to);  // the round trip ends here, whether its worker is still there or not
    std::size_t index = self->flow_.ledger.find(e.to_worker);
    if (index == pool_ledger::npos) {
      // The asking instance is gone (restarted or removed): the reply has nowhere to go.
      ++self->figures_.count().replies_dropped;
      logger("host.router")
          ->debug("{}: reply for gone worker {} dropped", self->pool_.spec.addr().str(), e.to_worker);
      return;
    }
    ++self->figures_.count().replies;
    self->flow_.slots.worker(index).post_reply(to_message(std::move(e), false));
  });
}

void router::on_connected() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->flow_.ledger.reset_requested();
    self->request_credit();
  });
}

void router::deliver(std::uint64_t generation, std::vector<topic_sink::delivery> batch) {
  boost::asio::defer(strand_, [self = shared_from_this(), generation, batch = std::move(batch)]() mutable {
    // What the batch hands each worker goes to it in one hop: its cell takes them one after another,
    // so their done reports come in one burst too, and their credit goes back in one pull.
    self->flow_.handing.begin();
    for (auto& d : batch) self->take(generation, d);
    self->flow_.handing.end([&](std::size_t index, std::vector<hand_over::posting>&& postings) {
      self->flow_.slots.worker(index).post_messages(std::move(postings));
    });
  });
}

void router::take(std::uint64_t generation, topic_sink::delivery& d) {
  flow_.ledger.on_delivery();
  ++figures_.count().delivered;
  auto e = join_envelope(std::move(d.props), pool_.topic, std::move(d.body));
  const int earlier_failures = e.attempt;
  auto m = to_message(std::move(e), d.redelivered);
  if (d.redelivered) {
    ++figures_.count().redelivered;
    // One that failed too often goes to dde.dead.<queue> instead of a worker.
    if (!lifecycle_.stopping() && settlement_.dead_letter_poison(generation, d.tag, m))
      return request_credit();
  }
  dispatch({generation, d.tag, d.published_us, std::move(m), earlier_failures});
}

bool router::dispatch(held_message&& w, bool front) {
  std::string sub_key;
  if (flow_.held.sub_pools()) {
    sub_key = flow_.held.sub_key(w.msg);
    // Its sub-pool is full: it waits for one of its key to finish while other keys go on.
    if (flow_.held.wait_for_sub_pool(sub_key, w)) {
      flow_.ledger.set_held(flow_.held.sub_held());
      return true;
    }
  }
  if (busy()) {
    flow_.held.push(std::move(w));
    return false;
  }
  std::vector<std::size_t> targets = flow_.routing->pick(w.msg, flow_.ledger);
  if (targets.empty()) {
    // No worker has room (for consistent-hash: the key's worker has none): hold it until one finishes.
    flow_.held.push(std::move(w), front);
    return false;
  }
  // Time in queue ends here, at the hand-over: held in this router counts as queued too.
  if (w.published_us) figures_.queued(w.published_us, clock_->wall_now());
  auto& msg = w.msg;
  if (flow_.held.sub_pools()) flow_.held.sub_pool_started(sub_key);
  auto [id, d] = flow_.deliveries.open();
  d.generation = w.generation;
  d.tag = w.tag;
  d.pending = std::move(targets);  // (no hand-over below finishes one before this handler returns)
  d.sub_key = std::move(sub_key);
  if (supervision_.poison().enabled()) d.poison_id = msg.id();
  if (pool_.spec.retry.enabled() && pool_.spec.mode == delivery_mode::at_least_once) {
    d.earlier_failures = w.earlier_failures;
    d.retry_copy = std::make_shared<const message>(msg);
  }
  d.started = clock_->now();
  first_reply_.open(id, msg, d.pending);
  const auto& to = d.pending;
  for (std::size_t k = 0; k + 1 < to.size(); ++k) hand_to(to[k], message(msg), id);
  hand_to(to.back(), std::move(msg), id);
  return true;
}

void router::hand_to(std::size_t index, message&& msg, std::uint64_t delivery_id) {
  flow_.ledger.assign(index);
  watch_.handed(index, flow_.ledger.in_flight(index) == 1);
  if (flow_.handing.gathering()) return flow_.handing.add(index, std::move(msg), delivery_id);
  flow_.slots.worker(index).post_message(std::move(msg), delivery_id);
}

void router::finish_one(std::size_t index, std::uint64_t delivery_id, bool failed, bool proven) {
  auto* released = flow_.deliveries.release(delivery_id, index);
  if (!released) return;
  auto& d = *released;
  flow_.ledger.finish(index);
  settle_kill(index);
  watch_.active(index);
  if (!failed) flow_.slots.count_done(index);
  if (proven) {  // not a message given back as the pool stops, or dead-lettered after rate limits
    hot_.handled(index, failed);
    d.canary_failed = d.canary_failed || (failed && hot_.canary_on(index));
  }
  bool raced = first_reply_.raced(delivery_id);
  if (raced)
    first_reply_.copy_ended(delivery_id, failed);  // it may hand a copy to one more worker
  else
    d.failed = d.failed || failed;
  std::string sub_key;
  bool ended = d.pending.empty();
  bool acked = false;  // a raced message answered before its last copy ended
  if (ended && raced) {
    auto race = first_reply_.close(delivery_id);
    d.failed = race.failed;
    acked = race.acked;
  }
  if (ended) {
    sub_key = std::move(d.sub_key);
    if (!acked) settlement_.settle(d);
    if (!d.failed) figures_.handled(clock_->now() - d.started);
    flow_.deliveries.erase(delivery_id);
  }
  if (ended && flow_.held.sub_pools()) {
    flow_.held.sub_pool_finished(sub_key);  // the oldest waiting for it goes to the front of the queue
    flow_.ledger.set_held(flow_.held.sub_held());
  }
  // Held messages go out as workers get room (not while a swap is under way: they wait for the new ones).
  flush_waiting();
  request_credit();
  lifecycle_.drained_if(flow_.ledger.total_in_flight());
  if (flow_.ledger.total_in_flight() == 0) hot_.drained();
}

void router::hand_copy(std::uint64_t delivery_id, std::size_t index, message copy) {
  flow_.deliveries.find(delivery_id)->pending.push_back(index);
  hand_to(index, std::move(copy), delivery_id);
}

void router::ack_answered(std::uint64_t delivery_id) {
  settlement_.answered(*flow_.deliveries.find(delivery_id));
}

void router::flush_waiting() {
  while (!flow_.held.empty() && !busy())
    if (!dispatch(flow_.held.pop(), true)) break;
}

void router::give_back_held() {
  flow_.held.give_back([this](const held_message& w) { settlement_.give_back(w.generation, w.tag); });
  flow_.ledger.set_held(0);
}

void router::worker_done(std::size_t index, std::uint64_t delivery_id) {
  // Reports that come while one hop is on its way ride it: one hop per burst, not per message.
  if (!flow_.reports.add(index, delivery_id)) return;
  boost::asio::defer(strand_, [self = shared_from_this()] {
    // Credit is asked once for the burst, after every report of it (see request_credit).
    self->flow_.reports.finish_all([&](std::size_t index, std::uint64_t delivery_id) {
      ++self->figures_.count().done;
      self->finish_one(index, delivery_id, false);
    });
    self->request_credit();
  });
}

// Supervision (Erlang/Akka) and the starvation guard (thesis 3.2.1), as the router applies them:
// the supervisor decides what a worker's failure does, the guard which quiet workers get a PING and
// which are stuck; the router carries that out on the worker slots.

void router::worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what,
                           std::string new_id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what),
                              new_id = std::move(new_id)] {
    // A message the worker gave back unfinished: it returns to the broker (at-least-once).
    if (delivery_id != 0) return self->finish_one(index, delivery_id, true);
    if (new_id.empty()) {
      // The instance is down (it could not be recreated, or a remote link dropped): no more messages for it.
      self->flow_.slots.down(index, what);
      self->settle_kill(index);
    } else {
      ++self->figures_.count().restarts;
      self->flow_.ledger.set_alive(index, true, new_id);
    }
    self->request_credit();
  });
}

void router::worker_up(std::size_t index, std::string id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, id = std::move(id)] {
    if (self->lifecycle_.stopping() || index >= self->flow_.slots.size()) return;
    if (self->flow_.slots.up(index, id)) self->request_credit();
  });
}

void router::worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what)] {
    ++self->figures_.count().failed;
    self->lifecycle_.failed(what);
    if (delivery_id != 0) {
      // Counted against the message too: when it comes back too often, it is dead-lettered.
      if (auto* d = self->flow_.deliveries.find(delivery_id)) {
        // A canary's failures are the version's, not the message's: they do not make it poison.
        if (!d->poison_id.empty() && !self->hot_.canary_on(index))
          self->supervision_.poison().failed(d->poison_id, what);
        if (d->retry_copy) d->failure = what;
      }
      self->finish_one(index, delivery_id, true);
    }
    if (self->lifecycle_.stopping() || index >= self->flow_.slots.size()) return;
    auto& worker = self->flow_.slots.worker(index);
    auto decision = self->supervision_.on_crash(self->hot_.canary_on(index), self->clock_->now());
    switch (decision.what) {
      case supervisor::action::resume: worker.supervise(directive::resume, decision.backoff); break;
      case supervisor::action::stop_worker:
        self->flow_.slots.down(index, "stopped after: " + what);
        worker.supervise(directive::stop, decision.backoff);
        self->settle_kill(index);
        break;
      case supervisor::action::restart_worker:
        ++self->figures_.count().restarts;
        worker.supervise(directive::restart, decision.backoff);
        break;
      case supervisor::action::restart_pool: self->restart_pool(what); break;
      case supervisor::action::stop_pool: self->stop_pool(what); break;
    }
  });
}

void router::stop_pool(const std::string& why) {
  if (!lifecycle_.halt(supervision_.verdict().stopped_state(why) + "; RESTART starts it again",
                       supervision_.verdict().stop_reason()))
    return;
  logger("host.router")->error("{}: {}", pool_.spec.addr().str(), lifecycle_.state());
  hot_.halt();
  scaling_.stop();
  watch_.stop();
  flow_.ledger.set_paused(true);
  top_->cancel(pool_.topic);
  give_back_held();
  for (std::size_t i = 0; i < flow_.slots.size(); ++i) flow_.ledger.set_alive(i, false);
  flow_.slots.kill_each([] {});
}

void router::revive() {
  logger("host.router")->info("{}: RESTART of the stopped pool", pool_.spec.addr().str());
  lifecycle_.revive();
  supervision_.reset();
  hot_.resume();
  // The old instances were killed when it stopped; what they held went back to the broker.
  for (std::size_t k = 0; k < flow_.slots.size(); ++k) {
    if (flow_.slots.parked(k)) continue;  // the autoscaler's choice stands
    flow_.slots.reopen(k);
    renew_slot(k);
  }
  flow_.ledger.set_paused(false);
  flow_.ledger.reset_requested();  // the MQS forgot the credits when the pool cancelled its consumers
  request_credit();
  watch_.start();
  scaling_.start();
}

void router::restart_pool(const std::string& why) {
  // Escalation: the whole pool gets fresh instances; unfinished messages go back to the broker.
  if (!lifecycle_.begin_restart()) return;
  ++figures_.count().restarts;
  logger("host.router")->warn("{}: restarting every worker (escalated: {})", pool_.spec.addr().str(), why);
  flow_.ledger.set_paused(true);
  auto remaining = std::make_shared<std::size_t>(flow_.slots.size());
  flow_.slots.kill_each([self = shared_from_this(), remaining] {
    boost::asio::post(self->strand_, [self, remaining] {
      if (--*remaining > 0 || self->lifecycle_.stopping()) return;
      for (std::size_t k = 0; k < self->flow_.slots.size(); ++k) {
        if (self->flow_.slots.kill_requested(k)) {  // killed workers stay down until a RESTART
          self->flow_.slots.killed_now(k);
          continue;
        }
        self->renew_slot(k);
      }
      self->lifecycle_.end_restart();
      self->flow_.ledger.set_paused(false);
      self->flush_waiting();
      self->request_credit();
    });
  });
}

void router::ping(std::size_t index, std::function<void(bool, std::chrono::milliseconds)> pong) {
  flow_.slots.worker(index).ping(on_strand(std::move(pong)));
}

void router::fail_current(std::size_t index, std::string why) {
  flow_.slots.worker(index).fail_current(std::move(why));
}

void router::replace_stuck(std::size_t index) {
  logger("host.router")
      ->error(
          "{}: worker {} did not answer PING within {} ms; replacing it (its thread stays "
          "blocked in the plugin)",
          pool_.spec.addr().str(), flow_.slots.worker(index).id(), pool_.spec.pong_timeout.count());
  for (auto id : flow_.deliveries.held_by(index)) finish_one(index, id, true);
  watch_.forget(index);
  if (flow_.slots.kill_requested(index)) {
    // It was being killed: its before_kill cannot run on a blocked thread, and it stays down.
    flow_.slots.killed_now(index);
    return;
  }
  ++figures_.count().restarts;
  lifecycle_.failed("worker did not answer PING");
  if (pool_.spec.workers_paths[index] != "localhost" || !hot_.plugin()) return;
  if (renew_slot(index)) request_credit();
}

// Rate-limit governance (host/governance): a rate-limited worker pauses the whole pool, here and, through
// the MQS, in every replica; its message is tried again by the same worker after the pause, up to
// the retry limit, then dead-lettered.
void router::worker_rate_limited(std::size_t index, std::uint64_t delivery_id,
                                 std::chrono::milliseconds delay, std::string reason, message m) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, delay,
                              reason = std::move(reason), m = std::move(m)]() mutable {
    ++self->figures_.count().rate_limited;
    // The whole pool pauses, here and (through the MQS) in every replica, not only the worker that was hit.
    self->governance_.pause(
        std::clamp(delay, std::chrono::milliseconds(0), self->pool_.spec.backoff.max_delay), reason, true);
    auto* held = self->flow_.deliveries.held_by(delivery_id, index);
    if (!held) return;
    auto& d = *held;
    if (d.attempts < self->pool_.spec.backoff.retry_limit && !self->lifecycle_.stopping()) {
      // Tried again by the same worker once the pause is over (its gate holds it until then); it keeps
      // its place in the pool's accounting meanwhile.
      ++d.attempts;
      ++self->figures_.count().retries;
      self->watch_.active(index);
      self->flow_.slots.worker(index).post_message(std::move(m), delivery_id);
      return;
    }
    auto why = "rate limited " + std::to_string(d.attempts + 1) + " time(s), retry limit " +
               std::to_string(self->pool_.spec.backoff.retry_limit) + " reached; last reason: " + reason;
    if (self->lifecycle_.stopping()) {
      self->finish_one(index, delivery_id, true, false);  // back to the broker: another replica may take it
      return;
    }
    self->governance_.dead_letter(m, d.attempts + 1, why, self->hot_.md5());
    self->finish_one(index, delivery_id, false, false);  // acked: it is in the dead-letter queue now
  });
}

void router::on_pause(std::chrono::milliseconds delay, std::string reason, std::string origin) {
  boost::asio::post(
      strand_, [self = shared_from_this(), delay, reason = std::move(reason), origin = std::move(origin)] {
        if (!self->lifecycle_.stopping()) self->governance_.paused_by(delay, reason, origin);
      });
}

}  // namespace dde::host
