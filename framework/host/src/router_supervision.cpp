// Supervision (Erlang/Akka) and the starvation guard (thesis 3.2.1), as the router applies them:
// the supervisor decides what a worker's failure does, the guard which quiet workers get a PING and
// which are stuck; this file carries that out on the worker slots.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/names.hpp"
#include "dde/runtime/load_failures.hpp"
#include "router.hpp"

namespace dde::host {

void router::worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what,
                           std::string new_id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what),
                              new_id = std::move(new_id)] {
    // A message the worker gave back unfinished: it returns to the broker (at-least-once).
    if (delivery_id != 0) return self->finish_one(index, delivery_id, true);
    if (new_id.empty()) {
      // The instance is down (it could not be recreated, or a remote link dropped): no more messages for it.
      self->flow_.ledger.set_alive(index, false);
      if (index < self->flow_.slots.size()) self->flow_.slots[index].error = what;
      if (self->kill_requested(index)) self->settle_kill(index);
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
    auto kill = self->flow_.slots[index].kill;
    if (kill == kill_phase::stopping || kill == kill_phase::killed) return;
    self->flow_.ledger.set_alive(index, true, id);
    self->flow_.slots[index].error.clear();
    self->request_credit();
  });
}

void router::worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what)] {
    ++self->figures_.count().failed;
    self->lifecycle_.failed(what);
    if (delivery_id != 0) {
      // Counted against the message too: when it comes back too often, it is dead-lettered.
      if (auto d = self->flow_.deliveries.find(delivery_id); d != self->flow_.deliveries.end()) {
        // A canary's failures are the version's, not the message's: they do not make it poison.
        if (!d->second.poison_id.empty() && !self->hot_.canary_on(index))
          self->supervision_.poison().failed(d->second.poison_id, what);
        if (d->second.retry_copy) d->second.failure = what;
      }
      self->finish_one(index, delivery_id, true);
    }
    if (self->lifecycle_.stopping() || index >= self->flow_.slots.size()) return;
    auto& slot = self->flow_.slots[index];
    auto decision = self->supervision_.on_crash(self->hot_.canary_on(index), self->clock_->now());
    switch (decision.what) {
      case supervisor::action::resume: slot.worker->supervise(directive::resume, decision.backoff); break;
      case supervisor::action::stop_worker:
        self->flow_.ledger.set_alive(index, false);
        slot.error = "stopped after: " + what;
        slot.worker->supervise(directive::stop, decision.backoff);
        if (self->kill_requested(index)) self->settle_kill(index);
        break;
      case supervisor::action::restart_worker:
        ++self->figures_.count().restarts;
        slot.worker->supervise(directive::restart, decision.backoff);
        break;
      case supervisor::action::restart_pool: self->restart_pool(what); break;
      case supervisor::action::stop_pool: self->stop_pool(what); break;
    }
  });
}

void router::retry_later(delivery& d) {
  const auto& delays = pool_.spec.retry.delays;
  const int failures = d.earlier_failures + 1;
  std::string topic;
  broker_message copy;
  if (std::size_t(d.earlier_failures) < delays.size()) {
    auto delay = delays[std::size_t(d.earlier_failures)];
    auto e = to_envelope(*d.retry_copy);
    e.attempt = failures;
    topic = delay_topic(pool_.topic, delay.count());
    copy = split_envelope(e, topic);
    ++figures_.count().delayed;
    logger("host.router")
        ->info("{}: message {} failed ({}); it comes back in {} ms (retry {} of {})", pool_.spec.addr().str(),
               d.retry_copy->id(), d.failure, delay.count(), failures, delays.size());
  } else {
    topic = dead_letter_topic(pool_.topic);
    copy.payload = governance_.dead_letter_body(
        *d.retry_copy, failures,
        "failed " + std::to_string(failures) + " times (retry.delays spent); last failure: " + d.failure,
        hot_.md5());
  }
  // The original is acked only once the broker has the copy; refused, it goes back to the queue. The
  // link holds the callback until then: a weak reference, so a pool gone meanwhile is not kept alive.
  top_->enqueue_then(std::move(topic), std::move(copy.props), std::move(copy.payload),
                     [weak = weak_from_this(), generation = d.generation, tag = d.tag](bool confirmed) {
                       auto self = weak.lock();
                       if (!self)
                         return;  // the pool is gone: its unacked original comes back from the queue too
                       boost::asio::post(self->strand_, [self, generation, tag, confirmed] {
                         if (confirmed)
                           self->top_->ack(generation, tag);
                         else
                           self->top_->nack(generation, tag, true);
                       });
                     });
}

bool router::dead_letter_poison(std::uint64_t generation, std::uint64_t tag, const message& m) {
  auto& poison = supervision_.poison();
  if (!poison.enabled() || lifecycle_.stopping()) return false;
  auto verdict = poison.poisoned(m.id());
  if (!verdict) return false;
  governance_.dead_letter(m, verdict->failures,
                          "failed " + std::to_string(verdict->failures) + " times (supervision.maxFailures " +
                              std::to_string(poison.limit()) + "); last failure: " + verdict->last_failure,
                          hot_.md5());
  top_->ack(generation, tag);  // it is in the dead-letter queue now
  request_credit();
  return true;
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
  for (std::size_t i = 0; i < flow_.slots.size(); ++i) {
    flow_.ledger.set_alive(i, false);
    flow_.slots[i].worker->kill([] {});
  }
}

void router::revive() {
  logger("host.router")->info("{}: RESTART of the stopped pool", pool_.spec.addr().str());
  lifecycle_.revive();
  supervision_.reset();
  hot_.resume();
  // The old instances were killed when it stopped; what they held went back to the broker.
  for (std::size_t k = 0; k < flow_.slots.size(); ++k) {
    if (parked(k)) continue;  // the autoscaler's choice stands
    flow_.slots[k].kill = kill_phase::none;
    flow_.ledger.set_open(k, true);
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
  for (auto& s : flow_.slots) {
    s.worker->kill([self = shared_from_this(), remaining] {
      boost::asio::post(self->strand_, [self, remaining] {
        if (--*remaining > 0 || self->lifecycle_.stopping()) return;
        for (std::size_t k = 0; k < self->flow_.slots.size(); ++k) {
          if (self->kill_requested(k)) {  // killed workers stay down until a RESTART
            self->flow_.slots[k].kill = kill_phase::killed;
            self->flow_.ledger.set_alive(k, false);
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
}

void router::ping(std::size_t index, std::function<void(bool, std::chrono::milliseconds)> pong) {
  flow_.slots[index].worker->ping(
      [weak = weak_from_this(), pong = std::move(pong)](bool busy, std::chrono::milliseconds busy_for) {
        if (auto self = weak.lock())
          boost::asio::post(self->strand_, [pong, busy, busy_for] { pong(busy, busy_for); });
      });
}

void router::fail_current(std::size_t index, std::string why) {
  flow_.slots[index].worker->fail_current(std::move(why));
}

void router::replace_stuck(std::size_t index) {
  logger("host.router")
      ->error(
          "{}: worker {} did not answer PING within {} ms; replacing it (its thread stays "
          "blocked in the plugin)",
          pool_.spec.addr().str(), flow_.slots[index].worker->id(), pool_.spec.pong_timeout.count());
  std::vector<std::uint64_t> held;
  for (auto& [id, d] : flow_.deliveries)
    if (std::find(d.pending.begin(), d.pending.end(), index) != d.pending.end()) held.push_back(id);
  for (auto id : held) finish_one(index, id, true);
  watch_.forget(index);
  if (kill_requested(index)) {
    // It was being killed: its before_kill cannot run on a blocked thread, and it stays down.
    flow_.slots[index].kill = kill_phase::killed;
    flow_.ledger.set_alive(index, false);
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
    auto it = self->flow_.deliveries.find(delivery_id);
    if (it == self->flow_.deliveries.end()) return;
    auto& d = it->second;
    if (std::find(d.pending.begin(), d.pending.end(), index) == d.pending.end()) return;
    if (d.attempts < self->pool_.spec.backoff.retry_limit && !self->lifecycle_.stopping()) {
      // Tried again by the same worker once the pause is over (its gate holds it until then); it keeps
      // its place in the pool's accounting meanwhile.
      ++d.attempts;
      ++self->figures_.count().retries;
      self->watch_.active(index);
      self->flow_.slots[index].worker->post_message(std::move(m), delivery_id);
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
