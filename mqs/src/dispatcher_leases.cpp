// Leases: a delivery held longer than RabbitMQ's consumer_timeout is taken back by the broker
// (the channel is closed, voiding every delivery on it). The dispatcher renews what it has held for
// `lease_` before that happens; see dispatcher.hpp and mqs/PROTOCOL.md "Leases".
#include <algorithm>

#include "dispatcher.hpp"

namespace dde::mqs {
namespace {
// A copy the broker refused is tried again after this.
constexpr auto lease_retry = std::chrono::seconds(1);
}  // namespace

void dispatcher::settle_copy(const std::string& topic, const broker_ref& ref, int how,
                             const std::string& body, const message_props& props) {
  if (how == settle_ack)
    port_.ack(ref);
  else if (how == settle_release)
    port_.release(ref);
  else if (how == settle_requeue)
    port_.reject(ref, false);  // the lease queue dead-letters it to the topic's queue: requeued there
  else
    port_.dead_letter_copy(topic, body, props, ref);
}

void dispatcher::settle_hold(topic_entry& topic, holding& h, int how, std::string& body,
                             message_props& props) {
  switch (h.phase) {
    case lease_phase::publishing:
      // The held delivery settles as asked; the copy, if the broker took it, is dropped as it comes.
      orphans_[h.id] = orphan{&topic, settle_release, {}, {}};
      [[fallthrough]];
    case lease_phase::held:
      if (h.copy)
        settle_copy(topic.first, h.ref, how, body, props);
      else if (how == settle_ack)
        port_.ack(h.ref);
      else
        port_.reject(h.ref, how == settle_requeue);
      break;
    case lease_phase::moved:  // only the copy is left: settled as it comes
      orphans_[h.id] = orphan{&topic, how, std::move(body), std::move(props)};
      break;
  }
}

dispatcher::holding* dispatcher::find_hold(std::uint64_t id, topic_entry** topic) {
  for (auto& [tag, f] : inflight_)
    if (f.hold.id == id) {
      if (topic) *topic = f.topic;
      return &f.hold;
    }
  for (auto& entry : topics_)
    for (auto& d : entry.second.buffer)
      if (d.hold.id == id) {
        if (topic) *topic = &entry;
        return &d.hold;
      }
  return nullptr;
}

void dispatcher::forget_orphans_of(const topic_entry* topic) {
  std::erase_if(orphans_, [&](auto& o) { return !topic || o.second.topic == topic; });
}

dispatcher::clock::time_point dispatcher::renew_leases(clock::time_point now) {
  auto next = clock::time_point::max();
  if (lease_.count() <= 0) return next;
  auto consider = [&](topic_entry& topic, holding& h, const std::string& body, const message_props& props) {
    if (h.phase != lease_phase::held || h.since == clock::time_point::max()) return;
    if (now < h.since + lease_) {
      next = std::min(next, h.since + lease_);
      return;
    }
    if (topic.second.mode != delivery_mode::at_least_once) {
      port_.release(h.ref);  // at-most-once: the MQS's alone from now on, as once handed over
      h.ref = broker_ref{};
      h.since = clock::time_point::max();
      return;
    }
    h.phase = lease_phase::publishing;
    port_.publish_lease(topic.first, h.id, body, props);
  };
  for (auto& topic : topics_)
    for (auto& d : topic.second.buffer) consider(topic, d.hold, d.body, d.props);
  // A partitioned topic's copies would come back to its pool's queue, not to their partitions'.
  for (auto& [tag, f] : inflight_)
    if (!f.topic->second.parts) consider(*f.topic, f.hold, f.body, f.props);
  return next == clock::time_point::max() ? now + lease_ : next;
}

void dispatcher::lease_published(std::uint64_t id, bool ok, clock::time_point now) {
  auto* h = find_hold(id);
  if (!h || h->phase != lease_phase::publishing) {
    // Settled meanwhile (no copy will come if refused), or the copy came before this confirm.
    if (!ok) orphans_.erase(id);
    return;
  }
  if (!ok) {
    h->phase = lease_phase::held;
    h->since = now - lease_ + lease_retry;  // due again in lease_retry
    return;
  }
  port_.release(h->ref);  // the copy stands for it now
  h->ref = broker_ref{};
  h->phase = lease_phase::moved;
}

void dispatcher::on_lease_copy(const std::string& topic, const broker_ref& ref, std::uint64_t id,
                               clock::time_point now) {
  if (auto o = orphans_.find(id); o != orphans_.end()) {
    settle_copy(topic, ref, o->second.how, o->second.body, o->second.props);
    orphans_.erase(o);
    return;
  }
  auto* h = find_hold(id);
  if (!h) {
    // Not held any more: its consumer was lost since (the delivery is void). Back to its queue.
    port_.reject(ref, false);
    return;
  }
  if (h->phase == lease_phase::held) {
    port_.release(
        ref);  // a second copy (the enqueuer published again after a lost connection): one is enough
    return;
  }
  // The copy may come before the broker's confirm reached us (another connection, another thread):
  // it is at the broker either way.
  if (h->phase == lease_phase::publishing) port_.release(h->ref);
  h->ref = ref;
  h->copy = true;
  h->phase = lease_phase::held;
  h->since = now;
}

void dispatcher::hand_back_copies() {
  auto hand_back = [&](holding& h) {
    if (!h.copy || h.phase != lease_phase::held || h.ref.epoch == 0) return;
    port_.reject(h.ref, false);
    h.ref = broker_ref{};
  };
  for (auto& [tag, f] : inflight_) hand_back(f.hold);
  for (auto& topic : topics_)
    for (auto& d : topic.second.buffer) hand_back(d.hold);
}

std::size_t dispatcher::renewing() const {
  std::size_t n = orphans_.size();
  for (auto& [tag, f] : inflight_) n += f.hold.phase != lease_phase::held;
  for (auto& [name, ts] : topics_)
    for (auto& d : ts.buffer) n += d.hold.phase != lease_phase::held;
  return n;
}

}  // namespace dde::mqs
