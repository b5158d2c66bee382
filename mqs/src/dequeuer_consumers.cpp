// The dequeuer's broker connections: its main one (connect, connection_lost), and its consumers, one
// connection and channel per topic, opened on the first pull, closed when idle, opened again after
// the broker cancelled it or its connection failed.
#include <algorithm>

#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dequeuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

// How long a channel goes without a delivery before the consumers a pool no longer needs go.
constexpr auto shrink_quiet = std::chrono::milliseconds(1000);
// How long an at-least-once ack behind an open delivery waits for a multiple ack to cover it.
constexpr auto ack_hold = std::chrono::milliseconds(1);

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dequeuer");
  return l;
}

}  // namespace

void dequeuer::plan_link(const std::string& topic, consumer& c, bool first) {
  // A link is opened afresh (the channel number is not reused on an old connection).
  c.link.session.reset();
  c.link.failed.clear();
  auto epoch = channels_.next_epoch();
  auto plan = mqs::plan_link(topic,
                             {c.mode, c.partitions, c.first_node, cfg_.quorum, std::uint16_t(cfg_.prefetch),
                              cfg_.lease.count(), mqs_id_},
                             epoch, first, main_.params);
  c.opening = plan->epoch;
  loop_.opener.open(std::move(plan), env_.open);
}

void dequeuer::adopt(link_plan& p) {
  auto it = consumers_.find(p.topic);
  // Stopped (or planned again) meanwhile: the connection closes with the plan, and what the
  // broker sent it goes back to the queue.
  if (it == consumers_.end() || it->second.opening != p.epoch) return;
  auto& c = it->second;
  c.opening = 0;
  for (auto& name : p.existing)
    log()->warn("queue {} exists with other arguments than the MQS would give it for {}: using it as it is",
                name, to_string(c.mode));
  if (!p.failed.empty()) {
    c.link.session = std::move(p.session);
    c.link.fail(p.failed);
    link_lost(p.topic, c);  // a connection-level failure: retried, not refused
    return;
  }
  if (!p.error.empty()) {
    if (p.first) {
      log()->error("{}", p.error);
      // The hosts that pulled it hear why; a later pull tries again.
      consumers_.erase(it);
      nlohmann::json header{{"action", "pull"}, {"topic", p.topic}, {"mode", to_string(p.mode)}};
      for (auto id : dispatcher_.refuse(p.topic))
        if (auto* out = hosts_.records(id)) append_error(*out, p.error, {}, &header);
    } else {
      auto delay = c.retry.next();
      log()->error("{}; retrying in {} ms", p.error, delay.count());
      c.retry_at = now() + delay;
    }
    return;
  }
  c.link.session = std::move(p.session);
  // Several consumers share the channel and their hosts settle out of order: an at-least-once
  // topic's acks may wait a little for one multiple ack (ack_batcher); an at-most-once one's may not.
  auto hold = c.mode == delivery_mode::at_least_once ? ack_hold : ack_batcher::clock::duration::zero();
  auto& ch = channels_.add(p.epoch, p.topic, p.epoch, p.tag, c.link, topic_channel, hold);
  ch.last_traffic = now();  // the stall watch counts a fresh consumer's quiet from here
  if (c.partitions) ch.partitioned = {c.partitions, c.key};
  // A partitioned topic's consumers are all there from the start, one per queue, and stay.
  for (std::size_t i = 1; i < p.queues.size(); ++i) ch.more_tags.push_back(p.tag + "+" + std::to_string(i));
  if (!p.queues.empty()) ch.next_more = std::uint32_t(p.queues.size());
  mqs_metrics::process().topic(p.topic).consumers.set(double(std::max<std::size_t>(p.queues.size(), 1)));
  c.link.channel = topic_channel;
  c.link.epoch = p.epoch;
  c.link.readable = true;  // the opener may have left deliveries in rabbitmq-c's buffer or the socket
  c.retry.reset();
  c.reconnect.reset();
  log()->debug("consuming {} ({}) with prefetch {}", p.topic, to_string(c.mode), cfg_.prefetch);
  if (!c.partitions) match_consumers(p.topic, c, now());  // one per worker that pulls
}

void dequeuer::set_consumers(const std::string& topic, std::uint32_t consumers) {
  auto it = consumers_.find(topic);
  if (it == consumers_.end()) return;
  if (it->second.partitions) return;  // one consumer per partition, whoever pulls
  it->second.wanted = std::clamp<std::uint32_t>(consumers, 1, max_consumers);
  if (it->second.link.channel) timers_.sooner(timer::shrink, match_consumers(topic, it->second, now()));
}

dequeuer::clock::time_point dequeuer::match_consumers(const std::string& topic, consumer& c,
                                                      clock::time_point now) {
  constexpr auto never = clock::time_point::max();
  auto* ch = channel_of(c.link);
  if (!ch) return never;
  auto have = [&] { return std::uint32_t(1 + ch->more_tags.size()); };
  // A quorum queue returns what was in transit to a consumer when it is cancelled (rabbitmq-server
  // #3729): the message comes again marked redelivered, and the return counts towards its delivery
  // limit. So the consumers of a pool that scaled down stay while messages flow (the dispatcher
  // still shares deliveries by the hosts' credit; the MQS holds at most their prefetch more), and
  // are cancelled once the channel was quiet both ways for shrink_quiet (no delivery came, and no
  // ack or reject went: each makes room for a delivery that may be on its way) and nothing can be
  // on its way to them: each holds its whole prefetch unsettled (the broker sends a consumer no
  // more than that), or the queue has no message ready (a passive declare). Quiet alone is not
  // enough: a loaded broker may stall for longer than shrink_quiet with a consumer's prefetch on
  // its way. What a cancelled consumer holds stays unacked on the channel, and is settled as usual.
  auto quiet_at = ch->last_traffic + shrink_quiet;
  if (have() == c.wanted) return never;
  if (have() > c.wanted && now < quiet_at) return quiet_at;
  watch_rpcs(c.link);
  turn_.walk.everything();  // an RPC's reads may leave deliveries in rabbitmq-c's buffer
  amqp_session::result r;
  if (have() > c.wanted) {
    bool full =
        std::all_of(ch->more_tags.begin() + (c.wanted - 1), ch->more_tags.end(), [&](const std::string& t) {
          return ch->acks.held_by(consumer_number(t, ch->consumer_tag)) >= cfg_.prefetch;
        });
    std::uint32_t ready = 0, consumers = 0;
    if (!full) r = c.link.session->queue_depth(ch->channel, topic, ready, consumers);
    if (r.ok() && ready > 0) {
      unwatch_rpcs();
      return now + shrink_quiet;  // asked again then, unless traffic came
    }
  }
  // basic.qos (global=false) set once on the channel applies to each consumer created on it.
  while (r.ok() && c.link.usable() && have() != c.wanted) {
    if (have() < c.wanted) {
      std::string tag = ch->consumer_tag + "+" + std::to_string(ch->next_more++);
      log()->debug("adding broker consumer {} of {} to {}", have() + 1, c.wanted, topic);
      r = c.link.session->consume(ch->channel, topic, tag);
      if (r.ok()) ch->more_tags.push_back(std::move(tag));
    } else {
      r = c.link.session->cancel(ch->channel, ch->more_tags.back());
      if (r.ok()) ch->more_tags.pop_back();
    }
  }
  unwatch_rpcs();
  if (c.link.lost(r)) return never;  // the run loop sees link.failed
  if (!r.ok()) {
    drop_channel(ch->epoch, "cannot change the consumers of " + topic + ": " + r.error, false);
    return never;
  }
  mqs_metrics::process().topic(topic).consumers.set(have());
  log()->debug("{} consumed by {} broker consumers", topic, have());
  return never;
}

dequeuer::clock::time_point dequeuer::shrink_quiet_consumers(clock::time_point now) {
  auto due = clock::time_point::max();
  for (auto& [topic, c] : consumers_)
    if (c.link.usable() && c.link.channel && !c.partitions)
      due = std::min(due, match_consumers(topic, c, now));
  return due;
}

void dequeuer::retry_consumers(clock::time_point now) {
  for (auto& [topic, c] : consumers_) {
    if (c.link.channel || c.opening || now < c.retry_at) continue;
    plan_link(topic, c, false);
  }
}

void dequeuer::connect() {
  std::string error;
  turn_.walk.everything();
  main_.session = env_.open(main_.params, error);
  if (!main_.session) {
    auto delay = main_.reconnect.next();
    log()->warn("cannot connect to the broker: {}; retrying in {} ms", error, delay.count());
    timers_.set(timer::connect, now() + delay);
    return;
  }
  if (main_.ever_connected) mqs_metrics::process().reconnected("consume");
  log()->info("{} broker at {} (consuming)", main_.ever_connected ? "reconnected to" : "connected to",
              main_.session->node());
  main_.ever_connected = true;
  loop_.thread.socket_fd = main_.session->fd();
  main_.reconnect.reset();
  for (auto& [topic, c] : consumers_)  // consume again, at once, what hosts still pull
    if (!c.link.session) c.retry_at = {};
  timers_.set(timer::governance_retry, {});  // and hear other MQS processes' pauses
  pauses_.retry().reset();
}

void dequeuer::connection_lost() {
  // A cluster's next node first: the one this connection was on may be down.
  if (main_.session)
    main_.params.first_node = next_node(main_.session->node_index(), main_.params.nodes.size());
  // After a broker gone silent, not before the next sweep has read every link once more: the
  // reconnect runs on the loop and waits up to the handshake timeout on a node that accepts
  // connections but does not answer, and the topics' links on that node notice its silence first,
  // while the loop runs.
  const auto t = now();
  auto at = t + main_.reconnect.next();
  if (main_.went_silent) at = std::max(at, timers_.at(timer::sweep) + std::chrono::milliseconds(1));
  log()->warn("broker connection lost: {}; reconnecting in {} ms", main_.failed,
              std::chrono::duration_cast<std::chrono::milliseconds>(at - t).count());
  turn_.walk.everything();
  loop_.thread.socket_fd = -1;
  channels_.erase(main_.epoch);  // its server-named queue went with the connection
  main_.reset_broken();
  timers_.set(timer::connect, at);
}

void dequeuer::link_lost(const std::string& topic, consumer& c) {
  // On a cluster, the next node first: the one the link was on may be down.
  if (c.link.session) c.first_node = next_node(c.link.session->node_index(), main_.params.nodes.size());
  auto delay = c.reconnect.next();
  log()->warn("consumer of {} lost its broker connection: {}; consuming again in {} ms", topic, c.link.failed,
              delay.count());
  channels_.erase(c.link.epoch);
  c.link.reset_broken();
  mqs_metrics::process().topic(topic).consumers.set(0);
  dispatcher_.on_consumer_lost(topic);  // its delivery tags are void: the broker requeues them
  c.retry_at = now() + delay;
}

std::string dequeuer::start_consumer(const std::string& topic, delivery_mode mode, std::uint32_t partitions) {
  turn_.walk.everything();
  auto [it, fresh] = consumers_.try_emplace(topic);
  it->second.link.failure_count = turn_.walk.failure_counter();
  it->second.mode = mode;
  it->second.partitions = partitions;
  if (main_.usable()) plan_link(topic, it->second, true);  // else consumed once the broker is back
  return {};                                               // a refusal comes when the link is adopted (adopt)
}

void dequeuer::stop_consumer(const std::string& topic) {
  auto it = consumers_.find(topic);
  if (it == consumers_.end()) return;
  turn_.walk.everything();
  if (it->second.link.epoch) {
    log()->debug("closing the idle dequeuer of {}", topic);
    drop_channel(it->second.link.epoch, {}, true);
  }
  consumers_.erase(it);  // closes its connection: what it had buffered goes back to the queue
}

void dequeuer::drop_channel(std::uint64_t epoch, const std::string& why, bool close) {
  auto* ch = channels_.find(epoch);
  if (!ch) return;
  turn_.walk.everything();
  auto& link = *ch->link;
  if (close && link.usable()) {
    ch->acks.flush(link);  // what hosts already settled must reach the broker first
    std::vector<std::string> tags{ch->consumer_tag};
    tags.insert(tags.end(), ch->more_tags.begin(), ch->more_tags.end());
    if (link.usable() && &link != &main_) {
      loop_.opener.retire(std::move(link.session), link.channel,
                          std::move(tags));  // a topic's link goes whole
    } else if (link.usable()) {
      link.lost(cancel_and_close(*link.session, link.channel, tags));
    }
  }
  std::string topic = ch->topic;
  bool governance = ch->governance;
  channels_.erase(epoch);
  link.channel = 0;
  link.epoch = 0;
  if (!governance) mqs_metrics::process().topic(topic).consumers.set(0);
  if (governance) {  // its queue is gone with the channel (auto-delete): set up again shortly
    auto delay = pauses_.retry().next();
    log()->warn("pause consumer lost: {}; consuming pauses again in {} ms", why, delay.count());
    timers_.set(timer::governance_retry, now() + delay);
    return;
  }
  if (why.empty()) return;
  // The consumer died under us: its deliveries are void; consume again shortly, on a fresh
  // connection (the channel number is not reused on the old one).
  log()->warn("consumer of {} lost: {}", topic, why);
  dispatcher_.on_consumer_lost(topic);
  if (auto c = consumers_.find(topic); c != consumers_.end()) {
    if (c->second.link.usable()) c->second.link.session.reset();
    c->second.retry_at = now() + c->second.retry.next();
  }
}

// The pauses of other MQS processes (pause_feed), consumed on a channel of the main connection.
void dequeuer::retry_governance(clock::time_point now) {
  if (main_.channel || !timers_.due(timer::governance_retry, now) || !main_.usable()) return;
  auto err = setup_governance();
  if (err.empty() || !main_.usable()) return;
  auto delay = pauses_.retry().next();
  logger("mqs.governance")
      ->error("{}; pauses of other MQS processes do not reach this one's hosts; retrying in {} ms", err,
              delay.count());
  timers_.set(timer::governance_retry, now + delay);
}

std::string dequeuer::setup_governance() {
  std::uint16_t ch = allocate_channel();
  std::uint64_t epoch = channels_.next_epoch();
  std::string tag = "dde-mqs.governance." + std::to_string(epoch);
  auto r = pauses_.consume(*main_.session, ch, tag);
  if (main_.lost(r)) return {};
  if (!r.ok()) return "cannot consume pauses: " + r.error;  // the broker closed the channel
  auto& state = channels_.add(epoch, std::string(), epoch, tag, main_, ch);
  state.governance = true;
  main_.channel = ch;
  main_.epoch = epoch;
  return {};
}

// The delivery watchdog (dde/core/stall_watch.hpp): which topics wait on a quiet consumer, the
// broker asked about their queues off the loop, and a stalled topic consumed afresh.
void dequeuer::check_stalls(clock::time_point now) {
  std::vector<stall_watch::consumed> topics;
  for (auto& [topic, c] : consumers_) {
    auto* ch = c.link.usable() && c.link.channel ? channel_of(c.link) : nullptr;
    if (!ch) continue;
    // The broker sends nothing to consumers whose prefetch is all unacknowledged (a long job): that
    // is no stall.
    const bool room = ch->acks.outstanding() < std::size_t(cfg_.prefetch) * (1 + ch->more_tags.size());
    topics.push_back({topic, ch->last_traffic, room && dispatcher_.starved(topic)});
  }
  auto ask = stalls_.sweep(now, topics);
  if (ask.empty()) return;
  // On a connection of its own, from the node after the first suspect's (the node it is on may be
  // what stopped answering); a topic not answered counts as an idle one, asked again a limit later.
  auto params = main_.params;
  params.connection_name += " depths";
  auto& first = consumers_.at(ask.front());
  if (!params.nodes.empty() && first.link.session)
    params.first_node = next_node(first.link.session->node_index(), params.nodes.size());
  loop_.opener.run([this, params = std::move(params), ask = std::move(ask)] {
    std::string error;
    auto session = env_.open(params, error);
    constexpr std::uint16_t channel = 1;
    if (session && !session->open_channel(channel).ok()) session.reset();
    std::vector<dequeue_command> answers;
    answers.reserve(ask.size());
    for (auto& topic : ask) {
      dequeue::depth a{topic, 0};
      std::uint32_t messages = 0, consumers = 0;
      if (session && session->queue_depth(channel, topic, messages, consumers).ok()) a.ready = messages;
      answers.emplace_back(std::move(a));
    }
    submit(std::move(answers));
  });
}

void dequeuer::handle(dequeue::depth& answer, clock::time_point now) {
  auto it = consumers_.find(answer.topic);
  if (it == consumers_.end()) return;
  auto& c = it->second;
  auto* ch = c.link.usable() && c.link.channel ? channel_of(c.link) : nullptr;
  if (!ch || !stalls_.answer(answer.topic, answer.ready, ch->last_traffic, now)) return;
  auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(now - ch->last_traffic).count();
  logger("mqs.dequeuer")
      ->warn(
          "consumer of {} got nothing for {} ms while its hosts hold credit and {} messages are ready "
          "(its connection to {} may be frozen): consuming it on a fresh connection",
          answer.topic, quiet, answer.ready, c.link.session->node());
  mqs_metrics::process().topic(answer.topic).stalls.add();
  c.link.fail("stalled for " + std::to_string(quiet) + " ms");
}

}  // namespace dde::mqs
