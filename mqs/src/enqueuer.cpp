#include "enqueuer.hpp"

#include <algorithm>
#include <optional>
#include <span>
#include <unordered_map>

#include "broker_props.hpp"
#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

// Publishes per loop turn before incoming frames (confirms) are read again.
constexpr int publish_burst = 256;
// A burst's frames go out in writes of about this size (plain TCP).
constexpr std::size_t batch_flush_bytes = 128 * 1024;
/// The socket is read this often whether it said it had data or not: rabbitmq-c sends and checks
/// heartbeats when it reads.
constexpr auto sweep_period = std::chrono::seconds(1);

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.enqueuer");
  return l;
}

}  // namespace

enqueuer::enqueuer(const config& cfg, flow_control& flow, broker_env env)
    : cfg_(cfg), env_(std::move(env)), flow_(flow) {
  link_.params = broker_params_for(cfg, "dde-mqs enqueuer", cfg.heartbeat_s);
  timers_.clear(timer::drain);
}

enqueuer::~enqueuer() { stop(); }

void enqueuer::finish_loop() {
  auto left = queues_.size() + confirms_.size();
  if (left) log()->warn("stopping with {} message(s) not confirmed by the broker", left);
  link_.up = false;
  thread_.socket_fd = -1;
  link_.session.reset();
}

std::optional<std::chrono::milliseconds> enqueuer::turn() {
  bool stopping = thread_.stopping;
  auto& session = link_.session;
  if (!session && !stopping && timers_.due(timer::connect, now())) connect();
  take_inbox();
  if (session && timers_.due(timer::sweep, now())) {
    link_.readable = true;
    timers_.set(timer::sweep, now() + sweep_period);
  }
  // Frames left unwritten go first; until they have, nothing else may reach the socket (rabbitmq-c's
  // heartbeats and RPCs would land in the middle of a frame), nor is it read.
  if (!session || write_unsent()) {
    publish_pauses();  // first: a pause is urgent, and small
    answer_depths();
    queues_.take_due_retries(now());
    if (session) publish_some();
    if (session && (link_.readable || session->buffered())) read_frames();
    if (session) confirms_overdue();
  }
  replies_.send(flow_, counted_);
  if (stopping) {
    // What the hosts handed over is published and confirmed if the broker lets us, briefly.
    if (timers_.at(timer::drain) == timers_.never) timers_.set(timer::drain, now() + std::chrono::seconds(3));
    bool drained = queues_.empty() && confirms_.size() == 0 && !writer_.pending();
    if (!session || drained || timers_.due(timer::drain, now())) return std::nullopt;
  }
  if (session && wants_write()) return std::chrono::milliseconds(stopping ? 50 : 1000);  // writable
  if (session && (can_publish() || session->buffered())) return std::chrono::milliseconds(0);

  auto until = [&](clock::time_point t, long long cap) {
    return std::chrono::milliseconds(std::clamp<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t - now()).count(), 0, cap));
  };
  auto timeout = std::chrono::milliseconds(stopping ? 50 : 1000);  // idle: still service heartbeats
  if (auto retry = queues_.next_retry()) timeout = until(*retry, timeout.count());
  if (!session) timeout = until(timers_.at(timer::connect), 1000);
  return timeout;
}

void enqueuer::publish_pauses() {
  if (auto r = pauses_.publish(link_.session.get()); r.connection_lost()) lost(r.error);
}

void enqueuer::answer_depths() {
  if (auto error = admin_.answer_depths(link_.session.get())) lost(*error);
}

void enqueuer::take_inbox() {
  for (auto& m : inbox_.take()) queues_.add(std::move(m));
}

void enqueuer::connect() {
  std::string error;
  auto& session = link_.session;
  session = env_.open(link_.params, error);
  amqp_session::result r;
  if (session) {
    r = session->open_channel(confirm_channel);
    if (r.ok()) r = session->confirm_select(confirm_channel);
    if (r.ok()) r = session->open_channel(transient_channel);
    if (r.ok()) r = session->open_channel(declare_channel);
    error = r.error;
  }
  if (!session || !r.ok()) {
    session.reset();
    auto delay = link_.backoff.next();
    log()->warn("cannot connect to the broker: {}; retrying in {} ms", error, delay.count());
    timers_.set(timer::connect, now() + delay);
    return;
  }
  if (link_.ever_connected) mqs_metrics::process().reconnected("publish");
  log()->info("{} broker at {} (publishing)", link_.ever_connected ? "reconnected to" : "connected to",
              session->node());
  link_.node.store(int(session->node_index()));
  link_.ever_connected = true;
  link_.up = true;
  link_.readable = true;
  pauses_.reset();
  writer_.connected(*session);
  thread_.socket_fd = session->fd();
  link_.backoff.reset();
}

void enqueuer::lost(const std::string& why) {
  thread_.socket_fd = -1;
  link_.node.store(-1);
  auto& session = link_.session;
  // A cluster's next node first: the one this connection was on may be down.
  if (session) link_.params.first_node = next_node(session->node_index(), link_.params.nodes.size());
  if (session) session->mark_broken();
  session.reset();
  writer_.clear();
  link_.up = false;
  admin_.forget_all();
  // Whatever the broker had not confirmed is published again (duplicates are allowed, loss is not),
  // marked: the broker may have stored the first copy.
  auto again = confirms_.connection_lost();
  for (auto& m : again) mark_republished(m);
  queues_.put_back(std::move(again));
  auto delay = link_.backoff.next();
  log()->warn("broker connection lost: {}; reconnecting in {} ms ({} messages to publish)", why,
              delay.count(), queues_.confirmed().size() + queues_.transient().size());
  timers_.set(timer::connect, now() + delay);
}

void enqueuer::publish_some() {
  // One wall-clock reading per burst (at most publish_burst messages, written together), not one per message.
  auto wall_us = std::uint64_t(
      std::chrono::duration_cast<std::chrono::microseconds>(env_.wall_now().time_since_epoch()).count());
  auto& transient = queues_.transient();
  auto& confirmed = queues_.confirmed();
  for (int n = 0; n < publish_burst && link_.session && !writer_.pending(); ++n) {
    bool any = false;
    if (!transient.empty()) {
      any = true;
      if (publish(transient.front(), wall_us)) {
        flow_.remove(1, transient.front().body.size());
        transient.pop_front();
      }
    }
    if (link_.session && !confirmed.empty() && confirms_.size() < cfg_.confirm_window) {
      any = true;
      if (publish(confirmed.front(), wall_us))
        confirms_.published(queues_.take_front(delivery_mode::at_least_once), now());
    }
    if (!any) break;
    if (writer_.batched() >= batch_flush_bytes) flush_batch();  // may leave some unsent
  }
  flush_batch();
}

void enqueuer::flush_batch() {
  if (!link_.session) return;
  if (auto error = writer_.flush(*link_.session); !error.empty()) lost(error);  // the unconfirmed go again
}

bool enqueuer::write_unsent() {
  if (!writer_.pending()) return true;
  if (auto error = writer_.write_unsent(*link_.session); !error.empty()) {
    lost(error);
    return false;
  }
  return !writer_.pending();
}

// Publishes `msg`; false when it was not (connection lost: it stays queued; or refused: it was
// taken out of its queue and answered).
bool enqueuer::publish(outgoing_message& msg, std::uint64_t wall_us) {
  std::string error;
  if (!ensure_declared(msg, error)) return link_.session && refuse_front(msg.mode, error);
  bool confirmed = msg.mode == delivery_mode::at_least_once;
  auto channel = confirmed ? confirm_channel : transient_channel;
  std::uint8_t persistence = confirmed ? 2 : 1;
  // Stamped at its first publish: one published again (broker nack, reconnect) keeps its first time,
  // so the receiver's time in queue includes those retries.
  if (!msg.props.published_us) msg.props.published_us = wall_us;
  // A partitioned topic's message goes to its partition's queue.
  const std::string queue = msg.partition ? partition_queue(msg.topic, *msg.partition) : std::string();
  const std::string& routing_key = msg.partition ? queue : msg.topic;
  if (writer_.batching()) {  // plain TCP: sent with the rest of the burst, in one write
    if (!writer_.add(channel, routing_key, persistence, msg.body, msg.props))
      return refuse_front(msg.mode, "a topic name is at most 255 bytes");
  } else {
    amqp_session::publish_props props;  // amqps: rabbitmq-c writes each frame through OpenSSL
    props.delivery_mode = persistence;
    props.content_type = msg.props.content_type;
    props.message_id = msg.props.message_id;
    props.app_id = msg.props.app_id;
    props.headers = &msg.props.headers;
    props.published_us = msg.props.published_us;
    if (auto error = link_.session->publish(channel, {}, routing_key, props, msg.body); !error.empty()) {
      lost(error);
      return false;
    }
  }
  if (!confirmed) counted_(msg.topic).published.add();  // at-least-once: when confirmed
  return true;
}

bool enqueuer::refuse_front(delivery_mode mode, const std::string& error) {
  refuse(queues_.take_front(mode), error);
  return false;
}

bool enqueuer::ensure_declared(const outgoing_message& msg, std::string& error) {
  switch (admin_.ensure(*link_.session, msg, now(), error)) {
    case queue_admin::outcome::declared: return true;
    case queue_admin::outcome::refused: return false;
    case queue_admin::outcome::connection_lost: lost(error); return false;
  }
  return false;
}

void enqueuer::refuse(outgoing_message&& msg, const std::string& error) {
  if (msg.mode != delivery_mode::at_least_once) log()->warn("dropped a message to {}: {}", msg.topic, error);
  flow_.remove(1, msg.body.size());
  if (msg.mode == delivery_mode::at_least_once) replies_.refused(std::move(msg), error);
}

void enqueuer::read_frames() {
  amqp_frame_t frame;
  std::vector<outgoing_message> nacked;
  auto& session = link_.session;
  link_.readable = false;
  // The first read always goes to the socket (the sweep services heartbeats there).
  for (bool first = true; session && (first || !session->drained()); first = false) {
    int rc = session->try_read_frame(frame);
    if (rc == 0) break;
    if (rc < 0) {
      lost(amqp_session::status_text(rc));
      break;
    }
    if (frame.frame_type == AMQP_FRAME_METHOD) on_method(frame.channel, frame.payload.method, nacked);
  }
  if (session) session->release_buffers();
  retry_nacked(std::move(nacked));
}

// What the broker answers a publish, and what goes back: each host's confirms and rejects, the
// messages the broker nacked published again, and the publishing connection replaced when the
// broker keeps nacking or stops confirming.

void enqueuer::mark_republished(outgoing_message& m) {
  mark_resent(m.props);
  counted_(m.topic).republished.add();
}

void enqueuer::retry_nacked(std::vector<outgoing_message> nacked) {
  if (nacked.empty()) return;
  logger("mqs.enqueuer")
      ->warn("the broker nacked {} message(s) (first to {}); publishing them again in 200 ms", nacked.size(),
             nacked.front().topic);
  // Published again in the order they were first published (a host's seqs grow with its sends; a
  // multiple nack may list them in any order).
  std::stable_sort(nacked.begin(), nacked.end(), [](const outgoing_message& a, const outgoing_message& b) {
    return a.conn == b.conn ? a.seq < b.seq : a.conn.get() < b.conn.get();
  });
  for (auto& m : nacked) {
    mark_republished(m);  // a nack does not promise the broker kept no copy
    admin_.forget(m);     // the queue may have gone: declare it again before the retry
  }
  queues_.retry_at(std::move(nacked), now() + std::chrono::milliseconds(200));
  // A channel that published to a quorum queue while its leader's node was dying can go on being
  // nacked after a new leader is elected (RabbitMQ 3.10); a new connection is not. So when nacks
  // keep coming for a while (publishes to other queues may still be confirmed meanwhile), the
  // connection is replaced (on a cluster, by one to the next node).
  if (auto why = confirms_.nacks_came(now())) lost(*why);
}

void enqueuer::confirms_overdue() {
  if (auto why = confirms_.overdue(now())) lost(*why);
}

void enqueuer::on_method(std::uint16_t channel, const amqp_method_t& method,
                         std::vector<outgoing_message>& nacked) {
  switch (method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      auto* m = static_cast<amqp_basic_ack_t*>(method.decoded);
      if (channel == confirm_channel)
        confirms_.settle(m->delivery_tag, m->multiple, true, replies_.confirmed(), now());
      else
        confirms_.answered(now(), true);
      break;
    }
    case AMQP_BASIC_NACK_METHOD: {
      auto* m = static_cast<amqp_basic_nack_t*>(method.decoded);
      if (channel == confirm_channel)
        confirms_.settle(m->delivery_tag, m->multiple, false, nacked, now());
      else
        confirms_.answered(now(), false);
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      if (channel == pause_publisher::channel) {  // only pauses used it: keep the connection
        link_.session->reply_channel_close_ok(channel);
        pauses_.on_channel_closed(amqp_session::describe_close(method));
        break;
      }
      auto why = "channel " + std::to_string(channel) +
                 " closed by the broker: " + amqp_session::describe_close(method);
      link_.session->reply_channel_close_ok(channel);
      lost(why);
      break;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      auto why = "closed by the broker: " + amqp_session::describe_close(method);
      link_.session->reply_connection_close_ok();
      lost(why);
      break;
    }
    case AMQP_CONNECTION_BLOCKED_METHOD: {
      auto* m = static_cast<amqp_connection_blocked_t*>(method.decoded);
      logger("mqs.enqueuer")
          ->warn("the broker blocks publishing: {}",
                 std::string(static_cast<const char*>(m->reason.bytes), m->reason.len));
      confirms_.blocked();
      break;
    }
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      logger("mqs.enqueuer")->info("the broker unblocked publishing");
      confirms_.unblocked(now());
      break;
    default: break;
  }
}

}  // namespace dde::mqs
