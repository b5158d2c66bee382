#include "dequeuer.hpp"

#include <algorithm>
#include <charconv>

#include "broker_props.hpp"
#include "broker_props_amqp.hpp"
#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

/// What a delivery's content header says that a host needs (the envelope's fields, mqs/PROTOCOL.md,
/// and the publish stamp); headers of other kinds than strings are left out.
message_props props_of(const amqp_basic_properties_t* p) {
  message_props out;
  if (p) read_broker_props(*p, out, [](const amqp_table_entry_t&) {});
  return out;
}

constexpr auto idle_check_period = std::chrono::milliseconds(250);
constexpr auto blocked_poll = std::chrono::milliseconds(10);
constexpr auto sweep_period = std::chrono::seconds(1);
// How long a stopping dequeuer waits for the lease copies it awaits (mqs/PROTOCOL.md "Leases").
constexpr auto stop_grace = std::chrono::seconds(2);
// A pause is a few hundred bytes; anything much larger on the governance queue is not ours.
constexpr std::uint64_t max_governance_message = 64 * 1024;

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dequeuer");
  return l;
}

bool equals(amqp_bytes_t b, const std::string& s) {
  return b.len == s.size() && std::equal(s.begin(), s.end(), static_cast<const char*>(b.bytes));
}

/// `tag` is `first` or one of the consumers added beside it ("<first>+<n>"), current or cancelled:
/// a delivery of a consumer cancelled a moment ago is still the channel's to ack.
bool of_channel(amqp_bytes_t tag, const std::string& first) {
  if (equals(tag, first)) return true;
  auto* p = static_cast<const char*>(tag.bytes);
  return tag.len > first.size() + 1 && std::equal(first.begin(), first.end(), p) && p[first.size()] == '+';
}

}  // namespace

std::uint32_t consumer_number(std::string_view tag, std::string_view first) {
  if (tag.size() <= first.size() + 1) return 0;
  std::uint32_t n = 0;
  auto digits = tag.substr(first.size() + 1);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  return ec == std::errc() && end == digits.data() + digits.size() ? n : lease_consumer;
}

dequeuer::dequeuer(const config& cfg, std::string mqs_id, broker_env env)
    : cfg_(cfg),
      mqs_id_(std::move(mqs_id)),
      env_(std::move(env)),
      dispatcher_(*this, cfg.idle_timeout, cfg.lease) {
  main_.params = broker_params_for(cfg, "dde-mqs dequeuer", cfg.heartbeat_s);
  turn_.now = now();
  timers_.clear(timer::shrink);  // until a channel has consumers to spare
  timers_.clear(timer::stop_grace);
}

dequeuer::~dequeuer() { stop(); }

void dequeuer::finish_loop() {
  loop_.thread.socket_fd = -1;
  consumers_.clear();  // each closes its connection: what it had buffered goes back to its queue
  main_.session.reset();
}

std::optional<dequeuer::clock::time_point> dequeuer::turn() {
  // One last turn after stop(): what hosts sent (acks above all) reaches the broker first.
  bool last = loop_.thread.stopping;
  auto t = now();
  turn_.now = t;
  auto& walk = turn_.walk;
  if (last) walk.everything();
  if (!main_.session && !last && timers_.due(timer::connect, t)) connect();
  for (auto& cmd : loop_.commands.take_seen()) std::visit([&](auto& c) { handle(c, t); }, cmd);
  if (timers_.due(timer::sweep, t)) sweep(t, last);
  read_links();
  if (main_.usable()) retry_governance(t);
  if (main_.usable() && !last && (walk.all() || t >= walk.retry_due())) {
    walk.everything();  // a topic may plan its link
    retry_consumers(t);
  }
  for (auto& plan : loop_.opener.take()) {
    walk.everything();
    adopt(*plan);
  }
  if (main_.usable() && !last && timers_.due(timer::shrink, t))
    timers_.set(timer::shrink, shrink_quiet_consumers(t));
  if (dispatcher_.blocked()) dispatcher_.retry_blocked();
  if (timers_.due(timer::idle_check, t)) {
    dispatcher_.expire_idle(t);
    timers_.clear(timer::idle_check);
  }
  // Stopping, no lease is renewed (the enqueuer that would publish the copy has stopped).
  if (cfg_.lease.count() > 0 && !last && timers_.due(timer::lease_check, t))
    timers_.set(timer::lease_check, dispatcher_.renew_leases(t));
  // The last turns read on while a lease copy is on its way (bounded): left in the lease queue, the
  // copy of a job the host acked would come back when its TTL runs out, a duplicate. Then each held
  // copy goes back to its topic at once rather than after its TTL.
  bool awaiting = false;
  if (last) {
    if (timers_.at(timer::stop_grace) == timers_.never) timers_.set(timer::stop_grace, t + stop_grace);
    awaiting = !timers_.due(timer::stop_grace, t) && dispatcher_.renewing() > 0 && !consumers_.empty();
    if (!awaiting) dispatcher_.hand_back_copies();
  }
  const auto acks_due = flush(last);
  own_messages_.flush();
  if (!main_.failed.empty()) connection_lost();
  if (walk.all())
    for (auto& [topic, c] : consumers_)
      if (!c.link.failed.empty()) link_lost(topic, c);
  // Idle topics are looked for only while one may go idle (without credit), not at every period.
  if (dispatcher_.watching_idle()) timers_.sooner(timer::idle_check, t + idle_check_period);
  if (last) {
    if (!awaiting) return std::nullopt;
    return std::min(timers_.at(timer::stop_grace), timers_.at(timer::sweep));
  }
  return wake_time(acks_due);
}

void dequeuer::read_links() {
  if (main_.worth_reading()) read_frames(main_);
  auto& walk = turn_.walk;
  if (const auto& listed = walk.take_ready(); !walk.all()) {
    for (auto* link : listed)
      if (link->worth_reading()) read_frames(*link);
    return;
  }
  for (auto& [topic, c] : consumers_)
    if (c.link.worth_reading()) read_frames(c.link);
}

dequeuer::clock::time_point dequeuer::wake_time(clock::time_point acks_due) {
  auto wake_at = timers_.next([this](timer k) { return counts(k); });
  auto& walk = turn_.walk;
  if (walk.all()) {
    auto retry_due = clock::time_point::max();
    for (auto& [topic, c] : consumers_)
      if (!c.link.channel && !c.opening) retry_due = std::min(retry_due, c.retry_at);
    walk.set_retry_due(retry_due);
  }
  if (main_.session) wake_at = std::min(wake_at, walk.retry_due());
  // A host's send queue has no event when it drains: look again shortly.
  if (dispatcher_.blocked()) wake_at = std::min(wake_at, now() + blocked_poll);
  return std::min(wake_at, acks_due);
}

void dequeuer::sweep(clock::time_point now, bool last) {
  // Links are read now and then whatever poll said: rabbitmq-c sends and checks heartbeats when it
  // reads, so a broker gone silent is noticed, and ours go out. rabbitmq-c sends ours at the first
  // read a heartbeat after the last frame it sent, and gives up on a broker silent for two; the
  // broker sends its own every half heartbeat (each wakes the link's read) and gives up on us after
  // about two silent heartbeats. So the main link is read every sweep, and a topic's once every half
  // heartbeat (15 s by default): ours go out at most one and a half heartbeats apart, a silent
  // broker is noticed within two and a half, and a thousand idle topics cost 67 reads a second.
  main_.readable = true;
  turn_.walk.everything();
  const std::uint64_t slices = std::max<std::uint64_t>(cfg_.heartbeat_s / 2, 1);
  std::uint64_t i = 0;
  for (auto& [topic, c] : consumers_)
    if (i++ % slices == turn_.sweeps % slices) c.link.readable = true;
  ++turn_.sweeps;
  timers_.set(timer::sweep, now + sweep_period);
  if (!last) check_stalls(now);
}

void dequeuer::handle(dequeue::pull& c, clock::time_point now) {
  client_id id = c.conn->id();
  // The pool's counters exist (at 0) from its first pull on, not from its first message.
  mqs_metrics::process().topic(c.topic);
  hosts_.pulled(id, c.conn, c.binary_deliver);
  if (auto err = dispatcher_.pull(id, c.topic, c.mode, c.credit, now, c.consumers, c.partitions);
      !err.empty()) {
    nlohmann::json header{
        {"action", "pull"}, {"topic", c.topic}, {"mode", to_string(c.mode)}, {"credit", c.credit}};
    append_error(*hosts_.records(id), err, c.record, &header);
    return;
  }
  // Its key partitions what comes to the topic's own queue (from an MQS that did not know).
  if (auto it = consumers_.find(c.topic); c.partitions && it != consumers_.end()) it->second.key = c.key;
  std::vector<pause_notice> notices;  // a pause of the topic still running
  pauses_.board.listen(id, c.topic, now, notices);
  tell(notices);
}

void dequeuer::handle(dequeue::ack& c, clock::time_point now) { dispatcher_.ack(c.conn->id(), c.tags, now); }

void dequeuer::handle(dequeue::nack& c, clock::time_point now) {
  dispatcher_.nack(c.conn->id(), c.tags, c.requeue, now);
}

void dequeuer::handle(dequeue::cancel& c, clock::time_point now) {
  dispatcher_.cancel(c.conn->id(), c.topic, now);
  pauses_.board.stop_listening(c.conn->id(), c.topic);
}

void dequeuer::handle(dequeue::disconnect& c, clock::time_point now) {
  client_id id = c.conn->id();
  dispatcher_.disconnect(id, now);
  pauses_.board.forget(id);
  hosts_.forget(id);
}

void dequeuer::handle(dequeue::pause& c, clock::time_point now) {
  std::vector<pause_notice> notices;
  pauses_.board.pause(c.topic, c.ms, c.reason, c.origin, now, notices);
  tell(notices);
}

void dequeuer::read_frames(broker_link& link) {
  amqp_frame_t frame;
  bool delivered = false;
  // The first read always goes to the socket (the once-a-second sweep services heartbeats there).
  for (bool first = true; link.usable() && (first || !link.session->drained()); first = false) {
    int rc = link.session->try_read_frame(frame);
    if (rc == 0) break;
    if (rc < 0) {
      link.went_silent = rc == AMQP_STATUS_HEARTBEAT_TIMEOUT;
      link.fail(amqp_session::status_text(rc));
      break;
    }
    if (frame.frame_type == AMQP_FRAME_METHOD) {
      delivered = delivered || frame.payload.method.id == AMQP_BASIC_DELIVER_METHOD;
      on_method(link, frame);
      continue;
    }
    // Content of a stale channel (closed, then frames still queued) is not ours.
    auto* ch = frame.channel == link.channel ? channel_of(link) : nullptr;
    if (!ch || !ch->reading) continue;
    if (frame.frame_type == AMQP_FRAME_HEADER) {
      ch->remaining = frame.payload.properties.body_size;
      ch->body.clear();
      ch->props =
          ch->governance
              ? message_props{}
              : props_of(static_cast<const amqp_basic_properties_t*>(frame.payload.properties.decoded));
      ch->oversize = ch->governance && ch->remaining > max_governance_message;
      if (!ch->oversize) ch->body.reserve(ch->remaining);
      if (ch->remaining == 0) complete(*ch);
    } else if (frame.frame_type == AMQP_FRAME_BODY) {
      auto& frag = frame.payload.body_fragment;
      if (!ch->oversize) ch->body.append(static_cast<const char*>(frag.bytes), frag.len);
      ch->remaining -= std::min<std::uint64_t>(ch->remaining, frag.len);
      if (ch->remaining == 0) complete(*ch);
    }
  }
  if (delivered)
    if (auto* ch = channel_of(link)) ch->last_traffic = turn_.now;
  if (link.usable()) link.session->release_buffers();
}

void dequeuer::on_method(broker_link& link, amqp_frame_t& frame) {
  auto& method = frame.payload.method;
  auto* ch = frame.channel == link.channel ? channel_of(link) : nullptr;
  switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      auto* m = static_cast<amqp_basic_deliver_t*>(method.decoded);
      if (!ch || !of_channel(m->consumer_tag, ch->consumer_tag)) break;  // stale
      auto consumer = consumer_number({static_cast<const char*>(m->consumer_tag.bytes), m->consumer_tag.len},
                                      ch->consumer_tag);
      ch->reading = true;
      ch->lease_copy = consumer == lease_consumer;
      ch->ref = broker_ref{ch->epoch, frame.channel, m->delivery_tag};
      ch->consumer = consumer;
      ch->redelivered = m->redelivered;
      if (!ch->governance) ch->acks.delivered(m->delivery_tag, consumer);  // the pause consumer acks nothing
      break;
    }
    case AMQP_BASIC_CANCEL_METHOD: {  // the broker cancelled the consumer (queue deleted...)
      auto* m = static_cast<amqp_basic_cancel_t*>(method.decoded);
      if (ch && of_channel(m->consumer_tag, ch->consumer_tag))
        drop_channel(ch->epoch, "cancelled by the broker (queue deleted?)", true);
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      auto why = "channel closed by the broker: " + amqp_session::describe_close(method);
      link.session->reply_channel_close_ok(frame.channel);
      if (ch) drop_channel(ch->epoch, why, false);
      break;
    }
    case AMQP_CONNECTION_CLOSE_METHOD:
      link.fail("closed by the broker: " + amqp_session::describe_close(method));
      link.session->reply_connection_close_ok();
      break;
    case AMQP_CONNECTION_BLOCKED_METHOD:
      if (&link == &main_)  // once per broker, not once per topic
        log()->warn("the broker blocks the consuming connections: {}",
                    text_of(static_cast<amqp_connection_blocked_t*>(method.decoded)->reason));
      break;
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      if (&link == &main_) log()->info("the broker unblocked the consuming connections");
      break;
    default: break;
  }
}

void dequeuer::complete(channel_state& ch) {
  ch.reading = false;
  if (ch.governance)
    on_governance_message(ch.oversize ? std::string() : ch.body);
  else if (ch.lease_copy)
    on_lease_copy(ch);
  else {
    drop_lease_header(ch.props);
    // A copy the MQS published again is flagged, and so is the first copy when it comes after it.
    bool again = ch.redelivered;
    if (take_resent_mark(ch.props)) {
      again = true;
      if (!ch.props.message_id.empty()) books_.resent.remember(ch.props.message_id, turn_.now);
    } else if (!again && !ch.props.message_id.empty()) {
      again = books_.resent.seen(ch.props.message_id, turn_.now);
    }
    // A partitioned topic's partition is its consumer's number; what came to the topic's own queue
    // (its last consumer) is partitioned here, by its key.
    auto partition = ch.consumer;
    if (ch.partitioned.count && ch.consumer >= ch.partitioned.count)
      partition = partition_of(ch.body, ch.partitioned, ch.props.message_id);
    dispatcher_.on_delivery(ch.topic, ch.ref, again, std::move(ch.body), std::move(ch.props), turn_.now,
                            partition);
  }
  ch.body = std::string();
  ch.props = message_props{};
}

void dequeuer::ack(const broker_ref& ref) {
  if (auto* ch = channel_for(ref)) {
    books_.counted(ch->topic).acked.add();
    queue_ack(*ch, ref);
  }
}

void dequeuer::release(const broker_ref& ref) {
  if (auto* ch = channel_for(ref)) queue_ack(*ch, ref);
}

void dequeuer::queue_ack(channel_state& ch, const broker_ref& ref) {
  ch.acks.ack(ref.tag, turn_.now);  // held only on an at-least-once topic's channel (see setup)
  ch.last_traffic = turn_.now;
  channels_.settled(ref.epoch);
}

void dequeuer::reject(const broker_ref& ref, bool requeue) {
  if (auto* ch = channel_for(ref)) {
    ch->acks.reject(ref.tag, requeue);
    ch->last_traffic = turn_.now;
    channels_.settled(ref.epoch);
  }
}

void dequeuer::deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
                       const std::string& body, const message_props& props) {
  deliver_header form;
  auto* out = hosts_.records(client, form);
  if (!out) return;
  auto& counted = books_.counted(topic);
  counted.consumed.add();
  if (redelivered) counted.redelivered.add();
  append_deliver(*out, topic, tag, redelivered, body, props, form);
}

bool dequeuer::can_deliver(client_id client) {
  // Stopping: nothing more is handed to hosts (their connections are going; an at-most-once
  // delivery handed over is acked). What is buffered goes back to its queue with the consumers.
  if (loop_.thread.stopping) return false;
  return hosts_.has_room(client, cfg_.max_frame);
}

dequeuer::clock::time_point dequeuer::flush(bool all) {
  auto acks_due = channels_.flush(turn_.now, all);
  hosts_.send();
  return acks_due;
}

}  // namespace dde::mqs
