#include "enqueuer.hpp"

#include <algorithm>
#include <optional>

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
// A declared queue is declared again after this long: a reply queue that expired, or a queue
// someone deleted, comes back.
constexpr auto redeclare_after = std::chrono::seconds(30);
/// The socket is read this often whether it said it had data or not: rabbitmq-c sends and checks
/// heartbeats when it reads.
constexpr auto sweep_period = std::chrono::seconds(1);

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.enqueuer");
  return l;
}

}  // namespace

enqueuer::enqueuer(const config& cfg, flow_control& flow, broker_env env)
    : cfg_(cfg),
      env_(std::move(env)),
      flow_(flow),
      unsent_gauge_(mqs_metrics::process().registry().gauge(
          "dde_mqs_publish_unwritten_bytes",
          "Bytes of publish frames waiting for room in the broker socket (a broker that blocks publishers "
          "holds them there).")) {
  params_ = broker_params_for(cfg, "dde-mqs enqueuer", cfg.heartbeat_s);
}

enqueuer::~enqueuer() { stop(); }

void enqueuer::finish_loop() {
  auto left = pending_confirmed_.size() + pending_transient_.size() + retry_.size() + unconfirmed_.size();
  if (left) log()->warn("stopping with {} message(s) not confirmed by the broker", left);
  connected_ = false;
  thread_.socket_fd = -1;
  session_.reset();
}

std::optional<std::chrono::milliseconds> enqueuer::turn() {
  bool stopping = thread_.stopping;
  if (!session_ && !stopping && timers_.due(timer::connect, now())) connect();
  take_inbox();
  if (session_ && timers_.due(timer::sweep, now())) {
    readable_ = true;
    timers_.set(timer::sweep, now() + sweep_period);
  }
  // Frames left unwritten go first; until they have, nothing else may reach the socket (rabbitmq-c's
  // heartbeats and RPCs would land in the middle of a frame), nor is it read.
  if (!session_ || write_unsent()) {
    publish_pauses();  // first: a pause is urgent, and small
    answer_depths();
    take_due_retries();
    if (session_) publish_some();
    if (session_ && (readable_ || session_->buffered())) read_frames();
    if (session_) confirms_overdue();
  }
  replies_.send(flow_, counted_);
  if (stopping) {
    // What the hosts handed over is published and confirmed if the broker lets us, briefly.
    if (!drain_until_) drain_until_ = now() + std::chrono::seconds(3);
    bool drained = pending_confirmed_.empty() && pending_transient_.empty() && retry_.empty() &&
                   unconfirmed_.size() == 0 && unsent_.empty();
    if (!session_ || drained || now() >= *drain_until_) return std::nullopt;
  }
  if (session_ && wants_write()) return std::chrono::milliseconds(stopping ? 50 : 1000);  // writable
  if (session_ && (can_publish() || session_->buffered())) return std::chrono::milliseconds(0);

  auto until = [&](clock::time_point t, long long cap) {
    return std::chrono::milliseconds(std::clamp<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t - now()).count(), 0, cap));
  };
  auto timeout = std::chrono::milliseconds(stopping ? 50 : 1000);  // idle: still service heartbeats
  if (!retry_.empty()) timeout = until(retry_.front().first, timeout.count());
  if (!session_) timeout = until(timers_.at(timer::connect), 1000);
  return timeout;
}

void enqueuer::publish_pauses() {
  if (auto r = pauses_.publish(session_.get()); r.connection_lost()) lost(r.error);
}

void enqueuer::answer_depths() {
  auto queries = depths_.take();
  for (auto& q : queries) {
    std::uint32_t messages = 0, consumers = 0;
    std::string error = "not connected to the broker";
    if (session_) {
      auto r = session_->queue_depth(declare_channel, q.topic, messages, consumers);
      error = r.error;
      if (r.connection_lost()) {
        lost(r.error);
      } else if (r.channel_closed) {
        // E.g. 404, no such queue yet: the channel is reopened for the declares that follow.
        if (auto o = session_->open_channel(declare_channel); o.connection_lost()) lost(o.error);
      }
    }
    std::string out;
    append_depth(out, q.topic, messages, consumers, error);
    q.conn->send(std::move(out), true);
  }
}

void enqueuer::take_due_retries() {
  // Due retries go before what waits, in the order they were nacked (a host's seqs in order).
  auto t = now();
  auto due = std::find_if(retry_.begin(), retry_.end(), [&](const auto& r) { return r.first > t; });
  for (auto it = std::make_reverse_iterator(due); it != retry_.rend(); ++it)
    pending_confirmed_.push_front(std::move(it->second));
  retry_.erase(retry_.begin(), due);
}

bool enqueuer::can_publish() const {
  return !pending_transient_.empty() ||
         (!pending_confirmed_.empty() && unconfirmed_.size() < cfg_.confirm_window);
}

void enqueuer::take_inbox() {
  for (auto& m : inbox_.take()) {
    if (m.mode == delivery_mode::at_least_once)
      pending_confirmed_.push_back(std::move(m));
    else
      pending_transient_.push_back(std::move(m));
  }
}

void enqueuer::connect() {
  std::string error;
  session_ = env_.open(params_, error);
  amqp_session::result r;
  if (session_) {
    r = session_->open_channel(confirm_channel);
    if (r.ok()) r = session_->confirm_select(confirm_channel);
    if (r.ok()) r = session_->open_channel(transient_channel);
    if (r.ok()) r = session_->open_channel(declare_channel);
    error = r.error;
  }
  if (!session_ || !r.ok()) {
    session_.reset();
    auto delay = backoff_.next();
    log()->warn("cannot connect to the broker: {}; retrying in {} ms", error, delay.count());
    timers_.set(timer::connect, now() + delay);
    return;
  }
  if (ever_connected_) mqs_metrics::process().reconnected("publish");
  log()->info("{} broker at {} (publishing)", ever_connected_ ? "reconnected to" : "connected to",
              session_->node());
  node_.store(int(session_->node_index()));
  ever_connected_ = true;
  connected_ = true;
  readable_ = true;
  pauses_.reset();
  if (session_->plain())
    batch_ = std::make_unique<publish_frames>(session_->frame_max());
  else
    batch_.reset();  // amqps: rabbitmq-c writes each frame through OpenSSL
  thread_.socket_fd = session_->fd();
  backoff_.reset();
}

void enqueuer::lost(const std::string& why) {
  thread_.socket_fd = -1;
  node_.store(-1);
  confirms_.connection_lost();
  // A cluster's next node first: the one this connection was on may be down.
  if (session_) params_.first_node = next_node(session_->node_index(), params_.nodes.size());
  if (session_) session_->mark_broken();
  session_.reset();
  if (batch_) batch_->clear();  // at-most-once messages in it are lost with the connection
  unsent_.clear();
  count_unsent();
  connected_ = false;
  declared_.until.clear();
  // Whatever the broker had not confirmed is published again (duplicates are allowed, loss is not),
  // marked: the broker may have stored the first copy.
  auto again = unconfirmed_.reset();
  for (auto it = again.rbegin(); it != again.rend(); ++it) {
    mark_resent(it->props);
    pending_confirmed_.push_front(std::move(*it));
  }
  auto delay = backoff_.next();
  log()->warn("broker connection lost: {}; reconnecting in {} ms ({} messages to publish)", why,
              delay.count(), pending_confirmed_.size() + pending_transient_.size());
  timers_.set(timer::connect, now() + delay);
}

void enqueuer::publish_some() {
  // One wall-clock reading per burst (at most publish_burst messages, written together), not one per message.
  burst_wall_us_ = std::uint64_t(
      std::chrono::duration_cast<std::chrono::microseconds>(env_.wall_now().time_since_epoch()).count());
  for (int n = 0; n < publish_burst && session_ && unsent_.empty(); ++n) {
    bool any = false;
    if (!pending_transient_.empty()) {
      any = true;
      if (publish(pending_transient_.front())) {
        auto& m = pending_transient_.front();
        flow_.remove(1, m.body.size());
        pending_transient_.pop_front();
      }
    }
    if (session_ && !pending_confirmed_.empty() && unconfirmed_.size() < cfg_.confirm_window) {
      any = true;
      if (publish(pending_confirmed_.front())) {
        if (unconfirmed_.size() == 0) confirms_.waiting(now());
        unconfirmed_.published(std::move(pending_confirmed_.front()));
        pending_confirmed_.pop_front();
      }
    }
    if (!any) break;
    if (batch_ && batch_->size() >= batch_flush_bytes) flush_batch();  // may leave some unsent
  }
  flush_batch();
}

void enqueuer::flush_batch() {
  if (!session_ || !batch_ || batch_->empty()) return;
  std::size_t written = 0;
  auto error = session_->write_frames(batch_->bytes(), nonblocking_ ? &written : nullptr);
  if (error.empty() && nonblocking_ && written < batch_->bytes().size())
    unsent_.append(batch_->bytes(), written);
  batch_->clear();
  count_unsent();
  if (!error.empty()) lost(error);  // what was not confirmed is published again
}

bool enqueuer::write_unsent() {
  if (unsent_.empty()) return true;
  std::size_t written = 0;
  auto error = session_->write_frames(unsent_, &written);
  if (!error.empty()) {
    lost(error);
    return false;
  }
  unsent_.erase(0, written);
  count_unsent();
  return unsent_.empty();
}

// Publishes `msg`; false when it was not (connection lost: it stays queued; or refused: it was
// taken out of its queue and answered).
bool enqueuer::publish(outgoing_message& msg) {
  std::string error;
  if (!ensure_declared(msg, error)) return session_ && refuse_front(msg.mode, error);
  bool confirmed = msg.mode == delivery_mode::at_least_once;
  auto channel = confirmed ? confirm_channel : transient_channel;
  std::uint8_t persistence = confirmed ? 2 : 1;
  // Stamped at its first publish: one published again (broker nack, reconnect) keeps its first time,
  // so the receiver's time in queue includes those retries.
  if (!msg.props.published_us) msg.props.published_us = burst_wall_us_;
  if (batch_) {  // plain TCP: sent with the rest of the burst, in one write
    if (!batch_->add(channel, msg.topic, persistence, msg.body, msg.props))
      return refuse_front(msg.mode, "a topic name is at most 255 bytes");
  } else {
    amqp_session::publish_props props;  // amqps: rabbitmq-c writes each frame through OpenSSL
    props.delivery_mode = persistence;
    props.content_type = msg.props.content_type;
    props.message_id = msg.props.message_id;
    props.app_id = msg.props.app_id;
    props.headers = &msg.props.headers;
    props.published_us = msg.props.published_us;
    if (auto error = session_->publish(channel, {}, msg.topic, props, msg.body); !error.empty()) {
      lost(error);
      return false;
    }
  }
  if (!confirmed) counted_(msg.topic).published.add();  // at-least-once: when confirmed
  return true;
}

bool enqueuer::refuse_front(delivery_mode mode, const std::string& error) {
  auto& queue = mode == delivery_mode::at_least_once ? pending_confirmed_ : pending_transient_;
  auto m = std::move(queue.front());
  queue.pop_front();
  refuse(std::move(m), error);
  return false;
}

bool enqueuer::ensure_declared(const outgoing_message& msg, std::string& error) {
  auto t = now();
  if (auto it = declared_.until.find(msg.topic); it != declared_.until.end() && t < it->second) return true;
  std::vector<queue_spec> specs;
  if (auto dl = dead_letter_spec_for(msg.topic, msg.mode, cfg_.quorum)) specs.push_back(*dl);
  specs.push_back(spec_for(msg.topic, msg.mode, cfg_.quorum));
  for (auto& spec : specs) {
    bool existing = false;
    auto r = session_->declare_or_use(declare_channel, spec, existing);
    if (r.connection_lost()) {
      lost(r.error);
      return false;
    }
    if (!r.ok()) {
      // Refused for another reason (access, a queue being deleted...): reopen the channel for the next.
      if (auto o = session_->open_channel(declare_channel); o.connection_lost()) {
        lost(o.error);
        return false;
      }
      error = "cannot declare queue " + spec.name + ": " + r.error;
      log()->error("{}", error);
      return false;
    }
    if (existing && declared_.warned.insert(spec.name).second)
      log()->warn("queue {} exists with other arguments than the MQS would give it for {}: using it as it is",
                  spec.name, to_string(msg.mode));
  }
  declared_.until[msg.topic] = t + redeclare_after;
  return true;
}

void enqueuer::refuse(outgoing_message&& msg, const std::string& error) {
  if (msg.mode != delivery_mode::at_least_once) log()->warn("dropped a message to {}: {}", msg.topic, error);
  flow_.remove(1, msg.body.size());
  if (msg.mode == delivery_mode::at_least_once) replies_.refused(std::move(msg), error);
}

void enqueuer::read_frames() {
  amqp_frame_t frame;
  std::vector<outgoing_message> nacked;
  readable_ = false;
  // The first read always goes to the socket (the sweep services heartbeats there).
  for (bool first = true; session_ && (first || !session_->drained()); first = false) {
    int rc = session_->try_read_frame(frame);
    if (rc == 0) break;
    if (rc < 0) {
      lost(amqp_session::status_text(rc));
      break;
    }
    if (frame.frame_type == AMQP_FRAME_METHOD) on_method(frame.channel, frame.payload.method, nacked);
  }
  if (session_) session_->release_buffers();
  retry_nacked(std::move(nacked));
}

}  // namespace dde::mqs
