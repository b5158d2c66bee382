// The dequeuer's work: what the hosts ask (pull, ack, nack, cancel, pause), what the broker sends
// (deliveries, cancels, closes) and what goes back to it (acks, rejects), and the lease copies that
// stand for long jobs (mqs/PROTOCOL.md "Leases").
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
  pauses_.listen(id, c.topic, now);
}

void dequeuer::handle(dequeue::ack& c, clock::time_point now) { dispatcher_.ack(c.conn->id(), c.tags, now); }

void dequeuer::handle(dequeue::nack& c, clock::time_point now) {
  dispatcher_.nack(c.conn->id(), c.tags, c.requeue, now);
}

void dequeuer::handle(dequeue::cancel& c, clock::time_point now) {
  dispatcher_.cancel(c.conn->id(), c.topic, now);
  pauses_.stop_listening(c.conn->id(), c.topic);
}

void dequeuer::handle(dequeue::disconnect& c, clock::time_point now) {
  client_id id = c.conn->id();
  dispatcher_.disconnect(id, now);
  pauses_.forget(id);
  hosts_.forget(id);
}

void dequeuer::handle(dequeue::pause& c, clock::time_point now) {
  pauses_.pause(c.topic, c.ms, c.reason, c.origin, now);
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
    pauses_.heard(ch.oversize ? std::string() : ch.body, now());
  else if (ch.lease_copy)
    on_lease_copy(ch);
  else {
    own_messages::drop_lease_header(ch.props);
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

// Leases: each at-least-once topic's channel also consumes the topic's lease queue, and the MQS's own
// messages (lease copies, dead-lettered copies) go out through the enqueuer, whose confirms come back
// through the inbox.
void dequeuer::on_lease_copy(channel_state& ch) {
  ch.lease_copy = false;
  auto id = own_messages::lease_id_of(ch.props);
  if (!id) {
    // Not one of ours: the lease queue gives it to the topic's queue.
    log()->warn("a message in the lease queue of {} names no delivery: returned to {}", ch.topic, ch.topic);
    reject(ch.ref, false);
    return;
  }
  log()->debug("lease copy of delivery {} of {} arrived (tag {}{})", *id, ch.topic, ch.ref.tag,
               ch.redelivered ? ", redelivered" : "");
  dispatcher_.on_lease_copy(ch.topic, ch.ref, *id, now());
}

void dequeuer::publish_lease(const std::string& topic, std::uint64_t id, const std::string& body,
                             const message_props& props) {
  mqs_metrics::process().topic(topic).leases.add();
  log()->debug("renewing the lease of delivery {} of {}: publishing a copy", id, topic);
  own_messages_.add_lease_copy(lease_topic(mqs_id_, cfg_.lease.count(), topic), id, body, props,
                               [this, id](bool ok) {
                                 submit({dequeue::leased{id, ok}});
                               });
}

void dequeuer::dead_letter_copy(const std::string& topic, const std::string& body, const message_props& props,
                                const broker_ref& ref) {
  own_messages_.add_dead_letter(topic, body, props, [this, ref](bool ok) {
    submit({dequeue::dead_lettered{ref, ok}});
  });
}

void dequeuer::handle(dequeue::leased& c, clock::time_point now) {
  log()->debug("the broker {} the lease copy of delivery {}", c.confirmed ? "confirmed" : "refused", c.id);
  dispatcher_.lease_published(c.id, c.confirmed, now);
  if (!c.confirmed) timers_.sooner(timer::lease_check, now + std::chrono::seconds(1));
}

void dequeuer::handle(dequeue::dead_lettered& c, clock::time_point) {
  if (c.confirmed)
    ack(c.ref);  // dead-lettered: the copy goes
  else
    reject(c.ref, false);  // not dead-lettered: back to the topic's queue rather than lost
}

}  // namespace dde::mqs
