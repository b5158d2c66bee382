// The message flow through a router: credit asked of the MQS, deliveries taken and handed to the
// workers its routing policy picks (a batch's share of each worker in one hop), and each message
// finished once its workers are done: acked or failed, its room given back, more credit asked.
#include <algorithm>
#include <boost/asio/defer.hpp>

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

void router::deliver(std::uint64_t generation, std::vector<topic_sink::delivery> batch) {
  boost::asio::defer(strand_, [self = shared_from_this(), generation, batch = std::move(batch)]() mutable {
    // What the batch hands each worker goes to it in one hop: its cell takes them one after another,
    // so their done reports come in one burst too, and their credit goes back in one pull.
    self->flow_.handing.begin();
    for (auto& d : batch) self->take(generation, d);
    self->flow_.handing.end([&](std::size_t index, std::vector<hand_over::posting>&& postings) {
      self->flow_.slots[index].worker->post_messages(std::move(postings));
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
    if (dead_letter_poison(generation, d.tag, m)) return;
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
  std::uint64_t id = flow_.next_delivery++;
  if (flow_.held.sub_pools()) flow_.held.sub_pool_started(sub_key);
  auto& d = flow_.deliveries[id];
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
  flow_.slots[index].worker->post_message(std::move(msg), delivery_id);
}

void router::finish_one(std::size_t index, std::uint64_t delivery_id, bool failed, bool proven) {
  // Each (message, worker) finishes once: a late report (e.g. from a replaced stuck worker) is ignored.
  auto it = flow_.deliveries.find(delivery_id);
  if (it == flow_.deliveries.end()) return;
  auto& pending = it->second.pending;
  auto at = std::find(pending.begin(), pending.end(), index);
  if (at == pending.end()) return;
  pending.erase(at);
  flow_.ledger.finish(index);
  if (kill_requested(index)) settle_kill(index);
  watch_.active(index);
  if (!failed) ++flow_.slots[index].done;
  auto& d = it->second;
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
    if (pool_.spec.mode == delivery_mode::at_least_once && !acked) settle_at_broker(d);
    if (!d.failed) figures_.handled(clock_->now() - d.started);
    flow_.deliveries.erase(it);
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

void router::settle_at_broker(delivery& d) {
  // A failed message goes back to the queue (whose delivery limit dead-letters a poison one), or
  // straight to dde.dead.<queue> when the pool says so.
  // A canary's failure sends it back to the queue: a bad version on trial costs no message a retry.
  bool dead_letter = pool_.spec.supervision.dead_letter && !d.canary_failed;
  if (d.failed && d.retry_copy && !d.failure.empty() && !d.canary_failed) {
    retry_later(d);  // a worker failed it: it comes back after the pool's next retry delay
  } else if (d.failed) {
    top_->nack(d.generation, d.tag, !dead_letter);
    if (dead_letter) ++figures_.count().dead_lettered;  // the broker moves it to dde.dead.<queue>
  } else {
    top_->ack(d.generation, d.tag);
    ++figures_.count().acked;
    if (!d.poison_id.empty()) supervision_.poison().done(d.poison_id);
  }
}

void router::hand_copy(std::uint64_t delivery_id, std::size_t index, message copy) {
  flow_.deliveries.at(delivery_id).pending.push_back(index);
  hand_to(index, std::move(copy), delivery_id);
}

void router::ack_answered(std::uint64_t delivery_id) {
  if (pool_.spec.mode != delivery_mode::at_least_once) return;
  auto& d = flow_.deliveries.at(delivery_id);
  top_->ack(d.generation, d.tag);
  ++figures_.count().acked;
}

void router::flush_waiting() {
  while (!flow_.held.empty() && !busy())
    if (!dispatch(flow_.held.pop(), true)) break;
}

void router::give_back_held() {
  flow_.held.give_back([this](const held_message& w) {
    if (pool_.spec.mode == delivery_mode::at_least_once) top_->nack(w.generation, w.tag, true);
  });
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

}  // namespace dde::host
