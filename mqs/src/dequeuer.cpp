#include "dequeuer.hpp"

#include <poll.h>

#include <algorithm>

#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/mqs/records.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

constexpr auto max_backoff = std::chrono::milliseconds(5000);
constexpr auto idle_check_period = std::chrono::milliseconds(250);
// A pause is a few hundred bytes; anything much larger on the governance queue is not ours.
constexpr std::uint64_t max_governance_message = 64 * 1024;

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dequeuer");
  return l;
}

std::string text_of(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

bool equals(amqp_bytes_t b, const std::string& s) {
  return b.len == s.size() && std::equal(s.begin(), s.end(), static_cast<const char*>(b.bytes));
}

}  // namespace

dequeuer::dequeuer(const config& cfg, std::string mqs_id)
    : cfg_(cfg), mqs_id_(std::move(mqs_id)), dispatcher_(*this, cfg.idle_timeout) {
  params_ = broker_params{cfg.broker_host, cfg.broker_port, cfg.user,          cfg.password,
                          cfg.vhost,       cfg.heartbeat_s, "dde-mqs dequeuer"};
}

dequeuer::~dequeuer() { stop(); }

void dequeuer::start() {
  thread_.start([this] { run(); });
}

void dequeuer::stop() {
  if (!thread_.stop([this] { inbox_.wake(); }))
    log()->warn("the broker connection did not let go within 10 s: closed it");
}

void dequeuer::run() {
  for (;;) {
    // One last turn after stop(): what hosts sent (acks above all) reaches the broker first.
    bool last = thread_.stopping;
    auto now = clock::now();
    if (!session_ && !last && now >= next_connect_) connect();
    for (auto& cmd : inbox_.take()) handle(cmd, now);
    if (session_ && failed_.empty()) read_frames();
    if (session_ && failed_.empty()) retry_governance(now);
    if (session_ && failed_.empty()) retry_consumers(now);
    if (now >= next_idle_check_) {
      dispatcher_.expire_idle(now);
      next_idle_check_ = now + idle_check_period;
    }
    flush();
    if (!failed_.empty()) connection_lost();
    if (last) break;
    if (session_ && session_->buffered()) continue;

    auto wake_at =
        std::min(clock::now() + std::chrono::seconds(1), session_ ? clock::time_point::max() : next_connect_);
    if (!consumers_.empty()) wake_at = std::min(wake_at, next_idle_check_);
    for (auto& [topic, c] : consumers_)
      if (session_ && !c.channel) wake_at = std::min(wake_at, c.retry_at);
    if (session_ && !governance_channel_) wake_at = std::min(wake_at, governance_retry_at_);
    int timeout_ms = int(std::clamp<long long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(wake_at - clock::now()).count(), 0, 1000));
    pollfd fds[2] = {{inbox_.fd(), POLLIN, 0}, {session_ ? session_->fd() : -1, POLLIN, 0}};
    ::poll(fds, session_ ? 2 : 1, timeout_ms);
  }
  thread_.socket_fd = -1;
  session_.reset();
  thread_.exited.set();
}

void dequeuer::connect() {
  std::string error;
  session_ = amqp_session::open(params_, error);
  if (!session_) {
    log()->warn("cannot connect to the broker at {}:{}: {}; retrying in {} ms", params_.host, params_.port,
                error, backoff_.count());
    next_connect_ = clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, max_backoff);
    return;
  }
  if (ever_connected_) mqs_metrics::process().reconnected("consume");
  log()->info("{} broker at {}:{} (consuming)", ever_connected_ ? "reconnected to" : "connected to",
              params_.host, params_.port);
  ever_connected_ = true;
  thread_.socket_fd = session_->fd();
  backoff_ = std::chrono::milliseconds(100);
  for (auto& [topic, c] : consumers_) c.retry_at = {};  // consume again what hosts still pull
  governance_retry_at_ = {};                            // and hear other MQS processes' pauses
  governance_retry_delay_ = std::chrono::milliseconds(1000);
}

void dequeuer::connection_lost() {
  log()->warn("broker connection lost: {}; reconnecting in {} ms", failed_, backoff_.count());
  failed_.clear();
  thread_.socket_fd = -1;
  if (session_) session_->mark_broken();
  session_.reset();
  channels_.clear();
  dirty_channels_.clear();
  for (auto& [topic, c] : consumers_) c.channel = 0;
  governance_channel_ = 0;       // its server-named queue went with the connection
  dispatcher_.on_broker_lost();  // delivery tags of that connection are void
  next_connect_ = clock::now() + backoff_;
  backoff_ = std::min(backoff_ * 2, max_backoff);
}

void dequeuer::handle(dequeue_command& cmd, clock::time_point now) {
  client_id id = cmd.conn->id();
  switch (cmd.what) {
    case dequeue_command::kind::pull: {
      auto& cs = clients_[id];
      if (!cs.conn) cs.conn = cmd.conn;
      if (auto err = dispatcher_.pull(id, cmd.topic, cmd.mode, cmd.credit, now); !err.empty()) {
        nlohmann::json header{
            {"action", "pull"}, {"topic", cmd.topic}, {"mode", to_string(cmd.mode)}, {"credit", cmd.credit}};
        append_error(outbox(id, cs), err, cmd.record, &header);
        break;
      }
      std::vector<pause_notice> notices;  // a pause of the topic still running
      pauses_.listen(id, cmd.topic, now, notices);
      tell(notices);
      break;
    }
    case dequeue_command::kind::ack:
      dispatcher_.ack(id, cmd.tags, now);
      break;
    case dequeue_command::kind::nack:
      dispatcher_.nack(id, cmd.tags, cmd.requeue, now);
      break;
    case dequeue_command::kind::cancel:
      dispatcher_.cancel(id, cmd.topic, now);
      pauses_.stop_listening(id, cmd.topic);
      break;
    case dequeue_command::kind::disconnect:
      dispatcher_.disconnect(id, now);
      pauses_.forget(id);
      clients_.erase(id);
      break;
    case dequeue_command::kind::pause: {
      std::vector<pause_notice> notices;
      pauses_.pause(cmd.topic, cmd.pause_ms, cmd.reason, cmd.origin, now, notices);
      tell(notices);
      break;
    }
  }
}

void dequeuer::read_frames() {
  amqp_frame_t frame;
  while (session_ && failed_.empty()) {
    int rc = session_->try_read_frame(frame);
    if (rc == 0) break;
    if (rc < 0) {
      failed_ = amqp_error_string2(rc);
      break;
    }
    switch (frame.frame_type) {
      case AMQP_FRAME_METHOD:
        on_method(frame);
        break;
      case AMQP_FRAME_HEADER: {
        auto it = channels_.find(frame.channel);
        if (it == channels_.end() || !it->second.reading) break;
        auto& ch = it->second;
        ch.remaining = frame.payload.properties.body_size;
        ch.body.clear();
        ch.oversize = ch.governance && ch.remaining > max_governance_message;
        if (!ch.oversize) ch.body.reserve(ch.remaining);
        if (ch.remaining == 0) complete(ch);
        break;
      }
      case AMQP_FRAME_BODY: {
        auto it = channels_.find(frame.channel);
        if (it == channels_.end() || !it->second.reading) break;
        auto& ch = it->second;
        auto& frag = frame.payload.body_fragment;
        if (!ch.oversize) ch.body.append(static_cast<const char*>(frag.bytes), frag.len);
        ch.remaining -= std::min<std::uint64_t>(ch.remaining, frag.len);
        if (ch.remaining == 0) complete(ch);
        break;
      }
      default:
        break;
    }
  }
  if (session_ && failed_.empty()) amqp_maybe_release_buffers(session_->state());
}

void dequeuer::on_method(amqp_frame_t& frame) {
  auto& method = frame.payload.method;
  switch (method.id) {
    case AMQP_BASIC_DELIVER_METHOD: {
      auto* m = static_cast<amqp_basic_deliver_t*>(method.decoded);
      auto it = channels_.find(frame.channel);
      if (it == channels_.end() || !equals(m->consumer_tag, it->second.consumer_tag)) break;  // stale
      auto& ch = it->second;
      ch.reading = true;
      ch.ref = broker_ref{ch.epoch, frame.channel, m->delivery_tag};
      ch.redelivered = m->redelivered;
      if (!ch.governance) ch.acks.delivered(m->delivery_tag);  // the pause consumer acks nothing
      break;
    }
    case AMQP_BASIC_CANCEL_METHOD: {  // the broker cancelled the consumer (queue deleted...)
      auto* m = static_cast<amqp_basic_cancel_t*>(method.decoded);
      auto it = channels_.find(frame.channel);
      if (it != channels_.end() && equals(m->consumer_tag, it->second.consumer_tag))
        drop_channel(frame.channel, "cancelled by the broker (queue deleted?)", true);
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      auto why = "channel closed by the broker: " + amqp_session::describe_close(method);
      session_->reply_channel_close_ok(frame.channel);
      drop_channel(frame.channel, why, false);
      break;
    }
    case AMQP_CONNECTION_CLOSE_METHOD:
      failed_ = "closed by the broker: " + amqp_session::describe_close(method);
      session_->reply_connection_close_ok();
      break;
    case AMQP_CONNECTION_BLOCKED_METHOD:
      log()->warn("the broker blocks the consuming connection: {}",
                  text_of(static_cast<amqp_connection_blocked_t*>(method.decoded)->reason));
      break;
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      log()->info("the broker unblocked the consuming connection");
      break;
    default:
      break;
  }
}

void dequeuer::complete(channel_state& ch) {
  ch.reading = false;
  if (ch.governance)
    on_governance_message(ch.oversize ? std::string() : ch.body);
  else
    dispatcher_.on_delivery(ch.topic, ch.ref, ch.redelivered, std::move(ch.body));
  ch.body = std::string();
}

dequeuer::channel_state* dequeuer::channel_for(const broker_ref& ref) {
  auto it = channels_.find(ref.channel);
  if (it == channels_.end() || it->second.epoch != ref.epoch) return nullptr;  // void: channel gone
  return &it->second;
}

void dequeuer::ack(const broker_ref& ref) {
  if (auto* ch = channel_for(ref)) {
    mqs_metrics::process().topic(ch->topic).acked.add();
    ch->acks.ack(ref.tag);
    dirty_channels_.insert(ref.channel);
  }
}

void dequeuer::reject(const broker_ref& ref, bool requeue) {
  if (auto* ch = channel_for(ref)) {
    ch->acks.reject(ref.tag, requeue);
    dirty_channels_.insert(ref.channel);
  }
}

void dequeuer::deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
                       std::string&& body) {
  auto it = clients_.find(client);
  if (it == clients_.end()) return;
  auto& counted = mqs_metrics::process().topic(topic);
  counted.consumed.add();
  if (redelivered) counted.redelivered.add();
  append_deliver(outbox(client, it->second), topic, tag, redelivered, body);
}

std::string& dequeuer::outbox(client_id client, client_state& cs) {
  if (cs.out.empty()) dirty_clients_.push_back(client);
  return cs.out;
}

void dequeuer::send_ack(std::uint16_t channel, std::uint64_t tag, bool multiple) {
  if (!session_ || !failed_.empty()) return;
  if (int rc = amqp_basic_ack(session_->state(), channel, tag, multiple); rc != AMQP_STATUS_OK)
    failed_ = std::string("basic.ack: ") + amqp_error_string2(rc);
}

void dequeuer::send_reject(std::uint16_t channel, std::uint64_t tag, bool requeue) {
  if (!session_ || !failed_.empty()) return;
  if (int rc = amqp_basic_reject(session_->state(), channel, tag, requeue); rc != AMQP_STATUS_OK)
    failed_ = std::string("basic.reject: ") + amqp_error_string2(rc);
}

void dequeuer::flush() {
  for (auto ch : dirty_channels_)
    if (auto it = channels_.find(ch); it != channels_.end()) it->second.acks.flush(*this);
  dirty_channels_.clear();
  for (auto id : dirty_clients_) {
    auto it = clients_.find(id);
    if (it == clients_.end() || it->second.out.empty()) continue;
    it->second.conn->send(std::move(it->second.out), true);
    it->second.out = std::string();
  }
  dirty_clients_.clear();
}

}  // namespace dde::mqs
