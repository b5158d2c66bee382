#include "dispatcher.hpp"

#include <algorithm>

#include "dde/protocol/mqs_request.hpp"

namespace dde::mqs {
namespace {
// Credit beyond this is pointless (the prefetch bounds what can arrive) and would only overflow.
constexpr std::uint64_t credit_cap = std::uint64_t(1) << 40;

/// The consumers the pullers of a topic stand for.
std::uint64_t sum_of(const std::unordered_map<client_id, std::uint32_t>& pullers) {
  std::uint64_t sum = 0;
  for (auto& [client, n] : pullers) sum += n;
  return sum;
}
}  // namespace

std::string dispatcher::pull(client_id client, const std::string& topic, delivery_mode mode,
                             std::uint32_t credit, clock::time_point now, std::uint32_t consumers,
                             std::uint32_t partitions) {
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    if (auto err = port_.start_consumer(topic, mode, partitions); !err.empty()) return err;
    it = topics_.emplace(topic, topic_state{}).first;
    it->second.mode = mode;
    watch_idle(*it);
    if (partitions) it->second.parts = std::make_unique<partition_board<buffered_delivery>>(partitions);
  } else if (it->second.mode != mode) {
    return "topic " + topic + " is consumed as " + std::string(to_string(it->second.mode)) +
           " by this MQS; a pull as " + std::string(to_string(mode)) + " is refused";
  } else if (auto has = it->second.parts ? it->second.parts->count() : 0; has != partitions) {
    return "topic " + topic + " is consumed with " + std::to_string(has) +
           " partitions by this MQS; a pull with " + std::to_string(partitions) + " is refused";
  }
  auto& ts = it->second;
  ts.last_used = now;
  // Hosts tell their workers with every pull: count again only when that changed. A partitioned
  // topic has one broker consumer per partition, whoever pulls it.
  auto [puller, fresh] = ts.pullers.try_emplace(client, consumers ? consumers : 1);
  bool changed = fresh || (consumers && consumers != puller->second);
  if (consumers) puller->second = consumers;
  if (ts.parts && fresh) ts.parts->join(client);
  if (changed && !ts.parts) count_consumers(topic, ts);
  if (credit == 0) return {};
  auto& c = ts.credits[client];
  if (c == 0) ts.ready.push_back(client);
  c = std::min(c + credit, credit_cap);
  drain(*it);
  return {};
}

void dispatcher::drain(topic_entry& topic) {
  auto& ts = topic.second;
  if (ts.parts) return drain_partitions(topic);
  while (!ts.buffer.empty() && !ts.ready.empty()) {
    // The next client in turn whose send queue has room; none: the delivery waits.
    std::size_t turns = ts.ready.size();
    while (turns > 0 && !port_.can_deliver(ts.ready.front())) {
      ts.ready.push_back(ts.ready.front());
      ts.ready.pop_front();
      --turns;
    }
    if (turns == 0) {
      blocked_ = true;
      return;
    }
    auto d = std::move(ts.buffer.front());
    ts.buffer.pop_front();
    hand_over(topic, std::move(d));
  }
}

void dispatcher::drain_partitions(topic_entry& topic) {
  auto& ts = topic.second;
  // Each host owns its partitions alone: none waits for another's turn.
  auto clients = ts.ready;
  for (auto client : clients) {
    while (ts.credits.count(client)) {
      if (!port_.can_deliver(client)) {
        blocked_ = blocked_ || ts.parts->waiting() > 0;
        break;
      }
      auto next = ts.parts->take_for(client);
      if (!next) break;
      send(topic, client, std::move(next->second), next->first);
    }
  }
}

void dispatcher::lose_partitions(topic_entry& topic, client_id client) {
  auto& ts = topic.second;
  std::map<std::uint32_t, std::vector<buffered_delivery>> in_hand;
  if (auto ct = client_tags_.find(client); ct != client_tags_.end()) {
    std::vector<std::uint64_t> mine;
    for (auto tag : ct->second)
      if (inflight_.at(tag).topic == &topic) mine.push_back(tag);
    std::sort(mine.begin(), mine.end());  // the order they were sent in
    for (auto tag : mine) {
      auto& f = inflight_.at(tag);
      // Still held at the broker by this MQS: the next owner settles it.
      in_hand[f.partition].push_back(buffered_delivery{f.hold, true, std::move(f.body), std::move(f.props)});
      --ts.in_flight;
      ct->second.erase(tag);
      inflight_.erase(tag);
    }
    if (ct->second.empty()) client_tags_.erase(ct);
  }
  ts.parts->lose(client, std::move(in_hand));
}

void dispatcher::hand_over(topic_entry& topic, buffered_delivery&& d) {
  send(topic, topic.second.ready.front(), std::move(d), 0);
}

void dispatcher::send(topic_entry& topic, client_id client, buffered_delivery&& d, std::uint32_t partition) {
  auto& ts = topic.second;
  auto c = ts.credits.find(client);
  ts.ready.erase(std::find(ts.ready.begin(), ts.ready.end(), client));
  if (--c->second == 0) {
    erase_credit(topic, c);
  } else {
    ts.ready.push_back(client);  // round-robin: next delivery goes to the next client with credit
  }

  std::uint64_t tag = next_tag_++;
  port_.deliver(client, topic.first, tag, d.redelivered, d.body, d.props);
  if (ts.mode == delivery_mode::at_least_once) {
    auto& f = inflight_.emplace(tag, inflight{client, &topic, d.hold, {}, {}, partition}).first->second;
    if (lease_.count() > 0 || ts.parts) {  // what a lease copies, or a lost owner's next gets
      f.body = std::move(d.body);
      f.props = std::move(d.props);
    }
    client_tags_[client].insert(tag);
    ++ts.in_flight;
  } else {
    port_.ack(d.hold.ref);  // at-most-once and reply: done once handed over
    // ...so nothing of it stays in the host's hand (its partition never waits to be drained).
    if (ts.parts) ts.parts->settled(partition);
  }
}

bool dispatcher::retry_blocked() {
  blocked_ = false;
  for (auto& topic : topics_) drain(topic);
  return !blocked_;
}

void dispatcher::on_delivery(const std::string& topic, const broker_ref& ref, bool redelivered,
                             std::string body, message_props props, clock::time_point now,
                             std::uint32_t partition) {
  auto it = topics_.find(topic);
  if (it == topics_.end()) {
    port_.reject(ref, true);
    return;
  }
  holding hold{ref, next_hold_++, now, lease_phase::held, false};
  buffered_delivery d{hold, redelivered, std::move(body), std::move(props)};
  if (auto& parts = it->second.parts)
    parts->arrived(partition % parts->count(), std::move(d));
  else
    it->second.buffer.push_back(std::move(d));
  drain(*it);
}

bool dispatcher::settle(client_id client, std::uint64_t tag, int how) {
  auto it = inflight_.find(tag);
  if (it == inflight_.end() || it->second.client != client) return false;
  auto& f = it->second;
  auto* topic = f.topic;
  auto partition = f.partition;
  if (how == settle_requeue) port_.returned(topic->first);
  settle_hold(*topic, f.hold, how, f.body, f.props);
  --topic->second.in_flight;
  if (auto ct = client_tags_.find(client); ct != client_tags_.end()) {
    ct->second.erase(tag);
    if (ct->second.empty()) client_tags_.erase(ct);
  }
  inflight_.erase(it);
  // The last of a draining partition settled: its next owner gets what waits.
  if (topic->second.parts &&
      topic->second.parts->settled(partition) != partition_board<buffered_delivery>::nobody)
    drain(*topic);
  return true;
}

void dispatcher::ack(client_id client, const std::vector<std::uint64_t>& tags, clock::time_point now) {
  for (auto tag : tags) {
    auto it = inflight_.find(tag);
    if (it != inflight_.end() && it->second.client == client) it->second.topic->second.last_used = now;
    settle(client, tag, settle_ack);
  }
}

void dispatcher::nack(client_id client, const std::vector<std::uint64_t>& tags, bool requeue,
                      clock::time_point now) {
  for (auto tag : tags) {
    auto it = inflight_.find(tag);
    if (it != inflight_.end() && it->second.client == client) it->second.topic->second.last_used = now;
    settle(client, tag, requeue ? settle_requeue : settle_drop);
  }
}

void dispatcher::drop_credit(topic_entry& topic, client_id client) {
  auto& ts = topic.second;
  auto c = ts.credits.find(client);
  if (c == ts.credits.end()) return;
  ts.ready.erase(std::remove(ts.ready.begin(), ts.ready.end(), client), ts.ready.end());
  erase_credit(topic, c);
}

void dispatcher::erase_credit(topic_entry& topic, credit_map::iterator credit) {
  topic.second.credits.erase(credit);
  if (topic.second.credits.empty()) watch_idle(topic);
}

void dispatcher::watch_idle(topic_entry& topic) {
  if (std::exchange(topic.second.idle_watched, true)) return;
  idle_watch_.push_back(&topic);
}

void dispatcher::count_consumers(const std::string& topic, topic_state& ts) {
  if (ts.pullers.empty()) return;  // the last consumer stays until the topic goes idle
  auto n = std::uint32_t(std::min<std::uint64_t>(sum_of(ts.pullers), max_consumers));
  // The first consumer is the one start_consumer opened.
  if (n == std::max<std::uint32_t>(ts.consumers, 1)) {
    ts.consumers = n;
    return;
  }
  ts.consumers = n;
  port_.set_consumers(topic, n);
}

void dispatcher::cancel(client_id client, const std::string& topic, clock::time_point now) {
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  it->second.last_used = now;
  drop_credit(*it, client);
  if (auto& parts = it->second.parts) {
    // What it has in hand stays its own to settle; its partitions move once it has.
    if (it->second.pullers.erase(client)) parts->leave(client);
    drain(*it);
    return;
  }
  if (it->second.pullers.erase(client)) count_consumers(topic, it->second);
  auto ct = client_tags_.find(client);
  if (ct == client_tags_.end()) return;
  std::vector<std::uint64_t> mine;
  for (auto tag : ct->second)
    if (inflight_.at(tag).topic == &*it) mine.push_back(tag);
  std::sort(mine.begin(), mine.end());
  for (auto tag : mine) settle(client, tag, settle_requeue);
}

void dispatcher::disconnect(client_id client, clock::time_point now) {
  for (auto& topic : topics_) {
    auto& [name, ts] = topic;
    if (ts.credits.count(client)) ts.last_used = now;
    drop_credit(topic, client);
    bool pulled = ts.pullers.erase(client) != 0;
    if (ts.parts) {
      // Also when it had cancelled: what it still held goes to the next owners, not to the broker
      // (a requeued message would come back behind the ones the next owner gets meanwhile).
      lose_partitions(topic, client);
      drain(topic);
    } else if (pulled) {
      count_consumers(name, ts);
    }
  }
  auto ct = client_tags_.find(client);
  if (ct == client_tags_.end()) return;
  std::vector<std::uint64_t> mine(ct->second.begin(), ct->second.end());
  std::sort(mine.begin(), mine.end());
  for (auto tag : mine) {
    inflight_.at(tag).topic->second.last_used = now;
    settle(client, tag, settle_requeue);
  }
}

void dispatcher::forget_inflight_of(const topic_entry* topic) {
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    if (topic && it->second.topic != topic) {
      ++it;
      continue;
    }
    if (auto ct = client_tags_.find(it->second.client); ct != client_tags_.end()) {
      ct->second.erase(it->first);
      if (ct->second.empty()) client_tags_.erase(ct);
    }
    --it->second.topic->second.in_flight;
    it = inflight_.erase(it);
  }
}

void dispatcher::on_consumer_lost(const std::string& topic) {
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  it->second.buffer.clear();
  if (it->second.parts) it->second.parts->clear_deliveries();
  forget_inflight_of(&*it);
  forget_orphans_of(&*it);
}

std::vector<client_id> dispatcher::refuse(const std::string& topic) {
  std::vector<client_id> out;
  auto it = topics_.find(topic);
  if (it == topics_.end()) return out;
  for (auto& [client, consumers] : it->second.pullers) out.push_back(client);
  std::sort(out.begin(), out.end());
  forget_inflight_of(&*it);
  forget_orphans_of(&*it);
  if (it->second.idle_watched) std::erase(idle_watch_, &*it);
  topics_.erase(it);
  return out;
}

void dispatcher::on_broker_lost() {
  for (auto& [name, ts] : topics_) {
    ts.buffer.clear();
    if (ts.parts) ts.parts->clear_deliveries();
  }
  forget_inflight_of(nullptr);
  forget_orphans_of(nullptr);
}

void dispatcher::expire_idle(clock::time_point now) {
  std::vector<std::string> idle;
  for (std::size_t i = 0; i < idle_watch_.size();) {
    auto* topic = idle_watch_[i];
    auto& ts = topic->second;
    bool awaited =
        std::any_of(orphans_.begin(), orphans_.end(), [&](auto& o) { return o.second.topic == topic; });
    bool expired = ts.credits.empty() && ts.in_flight == 0 && !awaited && now - ts.last_used >= idle_timeout_;
    if (!expired && ts.credits.empty()) {
      ++i;
      continue;
    }
    // Credit again (listed again when it runs out), or closed.
    ts.idle_watched = false;
    idle_watch_[i] = idle_watch_.back();
    idle_watch_.pop_back();
    if (expired) idle.push_back(topic->first);
  }
  for (auto& name : idle) {
    topics_.erase(name);
    // Buffered deliveries go back to the queue when the consumer's channel closes.
    port_.stop_consumer(name);
  }
}

std::vector<std::string> dispatcher::topics() const {
  std::vector<std::string> out;
  for (auto& [name, ts] : topics_) out.push_back(name);
  return out;
}

std::optional<delivery_mode> dispatcher::mode(const std::string& topic) const {
  auto it = topics_.find(topic);
  if (it == topics_.end()) return std::nullopt;
  return it->second.mode;
}

std::size_t dispatcher::buffered(const std::string& topic) const {
  auto it = topics_.find(topic);
  if (it == topics_.end()) return 0;
  return it->second.buffer.size() + (it->second.parts ? it->second.parts->waiting() : 0);
}

std::uint32_t dispatcher::consumers(const std::string& topic) const {
  auto it = topics_.find(topic);
  return it == topics_.end() ? 0 : std::uint32_t(sum_of(it->second.pullers));
}

bool dispatcher::starved(const std::string& topic) const {
  auto it = topics_.find(topic);
  return it != topics_.end() && !it->second.credits.empty() && it->second.buffer.empty() &&
         (!it->second.parts || it->second.parts->waiting() == 0);
}

std::size_t dispatcher::partitions_of(client_id client, const std::string& topic) const {
  auto it = topics_.find(topic);
  return it == topics_.end() || !it->second.parts ? 0 : it->second.parts->share(client);
}

std::uint64_t dispatcher::credit(client_id client, const std::string& topic) const {
  auto it = topics_.find(topic);
  if (it == topics_.end()) return 0;
  auto c = it->second.credits.find(client);
  return c == it->second.credits.end() ? 0 : c->second;
}

std::size_t dispatcher::unacked(client_id client) const {
  auto ct = client_tags_.find(client);
  return ct == client_tags_.end() ? 0 : ct->second.size();
}

}  // namespace dde::mqs
