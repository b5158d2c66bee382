#pragma once
// A fake broker for the MQS's broker threads, in the spirit of Beast's test::stream: the enqueuer
// and the dequeuer open `fake_session`s through `fake_broker::opener()` and see the AMQP frames a
// test queues (confirms, deliveries, closes, a dropped socket) exactly as rabbitmq-c would hand
// them over; everything they send (publishes, acks, RPCs) is recorded for the test to check.
// Time is the test's too (`fake_time`), so backoffs and retries are stepped, never slept.

#include <amqp.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "amqp_session.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "recording_connection.hpp"

namespace dde::mqs::testing {

/// A steady clock the test moves.
struct fake_time {
  std::chrono::steady_clock::time_point now{std::chrono::hours(1)};
  void advance(std::chrono::milliseconds d) { now += d; }
  std::function<std::chrono::steady_clock::time_point()> fn() {
    return [this] { return now; };
  }
};

struct settlement {
  std::uint16_t channel = 0;
  std::uint64_t tag = 0;
  bool flag = false;  ///< ack: multiple; reject: requeue
  bool operator==(const settlement&) const = default;
  friend void PrintTo(const settlement& s, std::ostream* os) {
    *os << "{channel " << s.channel << ", tag " << s.tag << (s.flag ? ", true}" : ", false}");
  }
};

class fake_session;

/// The broker side: what it refuses, and the sessions opened to it (newest last).
class fake_broker {
 public:
  /// While set, opening a connection fails with this error (a broker down, a wrong password).
  std::string refuse_open;
  /// Connection names of every open attempt, refused ones too.
  std::vector<std::string> attempts;
  std::vector<fake_session*> live;  ///< open sessions, in the order they were opened
  /// The next RPC of any session whose text starts with the key gets this answer (once), e.g. a
  /// connection-level 541 on the basic.consume of a connection not opened yet.
  std::map<std::string, amqp_session::result> refuse_next;
  /// Sessions opened from now on have a socket of sorts (a pipe): see fake_session::fd().
  bool pipes = false;
  /// Sessions opened from now on have a real socket (one end of a socketpair whose send buffer is
  /// `socket_buffer` bytes) and are plain: publishes come as frames through write_frames, which the
  /// test reads at fake_session::peer() (see fake_session::fd()).
  bool sockets = false;
  int socket_buffer = 4096;
  /// Ready messages of a queue as a passive declare on any session reports them (a session's own
  /// `depth` first).
  std::map<std::string, std::uint32_t> depth;
  /// The acks sessions had sent when they closed, in order.
  std::vector<std::pair<std::string, std::vector<settlement>>> closed_acks;
  /// The RPCs sessions had made when they closed, in order.
  std::vector<std::pair<std::string, std::vector<std::string>>> closed_rpcs;

  session_opener opener();
  /// The open session whose connection name ends with `suffix` ("" : the newest).
  fake_session* find(const std::string& suffix = {}) const;
};

struct published_message {
  std::uint16_t channel = 0;
  std::string exchange, routing_key, body, message_id;
  std::uint8_t delivery_mode = 0;
  std::uint64_t published_us = 0;  ///< its x-dde-published-us stamp
  std::vector<std::pair<std::string, std::string>> headers;
};

class fake_session final : public amqp_session {
 public:
  fake_session(fake_broker& broker, std::string connection_name)
      : name(std::move(connection_name)), broker_(broker) {
    broker_.live.push_back(this);
    if (broker_.sockets) {
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pipe_) != 0)
        ADD_FAILURE() << "socketpair: " << errno;
      ::setsockopt(pipe_[0], SOL_SOCKET, SO_SNDBUF, &broker_.socket_buffer, sizeof broker_.socket_buffer);
      socket_ = true;
    } else if (broker_.pipes && ::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
      ADD_FAILURE() << "pipe2: " << errno;
    }
  }
  ~fake_session() override {
    broker_.closed_acks.emplace_back(name, acks);
    broker_.closed_rpcs.emplace_back(name, rpcs);
    for (int fd : pipe_)
      if (fd >= 0) ::close(fd);
    broker_.live.erase(std::remove(broker_.live.begin(), broker_.live.end(), this), broker_.live.end());
  }

  const std::string name;  ///< the connection name it was opened with
  std::vector<published_message> published;
  std::vector<settlement> acks, rejects;
  /// The RPCs in order, e.g. "channel.open 1", "basic.consume 1 q tag", "basic.cancel 1 tag".
  std::vector<std::string> rpcs;
  bool broken = false;
  /// The next RPC whose text starts with the key gets this answer instead of ok (once).
  std::map<std::string, result> refuse_next;
  /// Ready messages of a queue as a passive declare reports them.
  std::map<std::string, std::uint32_t> depth;

  // --- frames the broker sends ---
  void confirm(std::uint64_t tag, bool multiple) { method(1, AMQP_BASIC_ACK_METHOD).ack = {tag, multiple}; }
  using amqp_session::nack;  // the client's basic.nack stays visible beside this broker-side one
  void nack(std::uint64_t tag, bool multiple) { method(1, AMQP_BASIC_NACK_METHOD).nack = {tag, multiple, 0}; }
  /// basic.deliver + content header + one body frame (none for an empty body).
  /// `published_us`: its x-dde-published-us header (0: none); `lease`: its x-dde-lease header (a
  /// lease copy's; empty: none); `resent`: the MQS's x-dde-resent mark.
  void deliver(std::uint16_t channel, const std::string& consumer_tag, std::uint64_t tag,
               const std::string& body, bool redelivered = false, const std::string& message_id = {},
               std::uint64_t published_us = 0, const std::string& lease = {}, bool resent = false) {
    auto& d = method(channel, AMQP_BASIC_DELIVER_METHOD);
    d.text1 = consumer_tag;
    d.deliver = {bytes(d.text1), tag, redelivered, amqp_empty_bytes, amqp_empty_bytes};
    auto& h = push(channel, AMQP_FRAME_HEADER);
    h.text1 = message_id;
    h.props._flags = message_id.empty() ? 0 : AMQP_BASIC_MESSAGE_ID_FLAG;
    h.props.message_id = bytes(h.text1);
    int n = 0;
    if (published_us) {
      auto& e = h.headers[n++];
      e.key = amqp_cstring_bytes("x-dde-published-us");
      e.value.kind = AMQP_FIELD_KIND_I64;
      e.value.value.i64 = std::int64_t(published_us);
    }
    if (!lease.empty()) {
      h.text2 = lease;
      auto& e = h.headers[n++];
      e.key = amqp_cstring_bytes("x-dde-lease");
      e.value.kind = AMQP_FIELD_KIND_UTF8;
      e.value.value.bytes = bytes(h.text2);
    }
    if (resent) {
      auto& e = h.headers[n++];
      e.key = amqp_cstring_bytes("x-dde-resent");
      e.value.kind = AMQP_FIELD_KIND_UTF8;
      e.value.value.bytes = amqp_cstring_bytes("1");
    }
    if (n) {
      h.props._flags |= AMQP_BASIC_HEADERS_FLAG;
      h.props.headers = amqp_table_t{n, h.headers};
    }
    h.frame.payload.properties.class_id = AMQP_BASIC_CLASS;
    h.frame.payload.properties.body_size = body.size();
    h.frame.payload.properties.decoded = &h.props;
    if (body.empty()) return;
    auto& b = push(channel, AMQP_FRAME_BODY);
    b.text1 = body;
    b.frame.payload.body_fragment = bytes(b.text1);
  }
  void cancel_consumer(std::uint16_t channel, const std::string& consumer_tag) {
    auto& f = method(channel, AMQP_BASIC_CANCEL_METHOD);
    f.text1 = consumer_tag;
    f.cancel = {bytes(f.text1), 0};
  }
  void close_channel_by_broker(std::uint16_t channel, std::uint16_t code, const std::string& text) {
    auto& f = method(channel, AMQP_CHANNEL_CLOSE_METHOD);
    f.text1 = text;
    f.channel_close = {code, bytes(f.text1), 0, 0};
  }
  void close_connection_by_broker(std::uint16_t code, const std::string& text) {
    auto& f = method(0, AMQP_CONNECTION_CLOSE_METHOD);
    f.text1 = text;
    f.connection_close = {code, bytes(f.text1), 0, 0};
  }
  /// connection.blocked (a memory or disk alarm) and connection.unblocked.
  void block(const std::string& reason) {
    auto& f = method(0, AMQP_CONNECTION_BLOCKED_METHOD);
    f.text1 = reason;
    f.blocked = {bytes(f.text1)};
  }
  void unblock() { method(0, AMQP_CONNECTION_UNBLOCKED_METHOD); }
  /// The socket fails once the frames queued so far are read.
  void drop() { push(0, 0).drop = true; }
  /// The same, as rabbitmq-c reports a broker that went silent: a heartbeat timeout.
  void go_silent() {
    auto& f = push(0, 0);
    f.drop = f.silent = true;
  }

  // --- amqp_session ---
  /// With fake_broker::pipes, a pipe's read end that gets a byte with every frame the broker sends,
  /// and those frames count as on the socket, not read into rabbitmq-c's buffer: only a loop that
  /// watches the fd (or reads every link now and then) reads them. With fake_broker::sockets the
  /// same, on a socketpair's end that write_frames writes to as well. Otherwise -1, and frames count
  /// as buffered (a loop reads them in its next turn).
  int fd() const override { return pipe_[0]; }
  /// With fake_broker::sockets: the broker's end, where the frames written arrive (any thread).
  int peer() const { return pipe_[1]; }
  std::uint16_t channel_max() const override { return 2047; }
  void mark_broken() override { broken = true; }
  bool buffered() const override { return pipe_[0] < 0 && !inbound_.empty(); }
  /// With a socket of sorts: nothing more is on it (the frames queued so far were read). Without
  /// one it cannot tell, as the real session over amqps.
  bool drained() const override { return pipe_[0] >= 0 && inbound_.empty(); }
  /// Frames not read yet, on the socket or buffered.
  bool unread() const { return !inbound_.empty(); }
  /// Without fake_broker::sockets every publish comes through publish(), none as raw frames.
  bool plain() const override { return socket_; }
  std::uint32_t frame_max() const override { return 131072; }
  std::string publish(std::uint16_t channel, std::string_view exchange, std::string_view routing_key,
                      const publish_props& props, std::string_view body) override {
    if (broken) return "basic.publish: socket is closed";
    published.push_back(
        {channel, std::string(exchange), std::string(routing_key), std::string(body),
         std::string(props.message_id), props.delivery_mode, props.published_us,
         props.headers ? *props.headers : std::vector<std::pair<std::string, std::string>>{}});
    return {};
  }
  std::string ack(std::uint16_t channel, std::uint64_t tag, bool multiple) override {
    if (broken) return "basic.ack: socket is closed";
    acks.push_back({channel, tag, multiple});
    return {};
  }
  std::string reject(std::uint16_t channel, std::uint64_t tag, bool requeue) override {
    if (broken) return "basic.reject: socket is closed";
    rejects.push_back({channel, tag, requeue});
    return {};
  }
  void release_buffers() override {}
  /// With fake_broker::sockets, as the real one: to the socket, waiting while it is full unless
  /// `written` is asked for. Every write is counted in `writes`.
  std::string write_frames(std::string_view bytes, std::size_t* written) override {
    if (!socket_) return "write_frames: not on a fake";
    ++writes;
    if (written) *written = 0;
    while (!bytes.empty()) {
      ssize_t n = ::send(pipe_[0], bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(std::size_t(n));
        if (written) *written += std::size_t(n);
      } else if (n < 0 && errno == EAGAIN && written) {
        break;
      } else if (n < 0 && errno == EAGAIN) {
        ADD_FAILURE() << "write_frames waits for a full socket";
        return "write_frames: would wait";
      } else {
        broken = true;
        return "send: " + std::to_string(errno);
      }
    }
    return {};
  }
  std::size_t writes = 0;
  result open_channel(std::uint16_t ch) override { return rpc("channel.open " + std::to_string(ch)); }
  result close_channel(std::uint16_t ch) override { return rpc("channel.close " + std::to_string(ch)); }
  result confirm_select(std::uint16_t ch) override { return rpc("confirm.select " + std::to_string(ch)); }
  result qos(std::uint16_t ch, std::uint16_t prefetch) override {
    return rpc("basic.qos " + std::to_string(ch) + " " + std::to_string(prefetch));
  }
  result consume(std::uint16_t ch, const std::string& queue, const std::string& tag, bool no_ack) override {
    return rpc("basic.consume " + std::to_string(ch) + " " + queue + " " + tag + (no_ack ? " no-ack" : ""));
  }
  result cancel(std::uint16_t ch, const std::string& tag) override {
    return rpc("basic.cancel " + std::to_string(ch) + " " + tag);
  }
  result declare(std::uint16_t ch, const queue_spec& spec, bool passive) override {
    return rpc(std::string(passive ? "queue.declare-passive " : "queue.declare ") + std::to_string(ch) + " " +
               spec.name);
  }
  result queue_depth(std::uint16_t ch, const std::string& queue, std::uint32_t& messages,
                     std::uint32_t& consumers) override {
    auto r = rpc("queue.declare-passive " + std::to_string(ch) + " " + queue);
    messages = depth.count(queue) ? depth[queue] : broker_.depth.count(queue) ? broker_.depth[queue] : 0;
    consumers = 0;
    return r;
  }
  result declare_exchange(std::uint16_t ch, std::string_view name, const char* type, bool) override {
    return rpc("exchange.declare " + std::to_string(ch) + " " + std::string(name) + " " + type);
  }
  result declare_private_queue(std::uint16_t ch, std::string& queue) override {
    queue = "amq.gen-" + std::to_string(rpcs.size());
    return rpc("queue.declare-private " + std::to_string(ch));
  }
  result bind(std::uint16_t ch, const std::string& queue, std::string_view exchange,
              const std::string& key) override {
    return rpc("queue.bind " + std::to_string(ch) + " " + queue + " " + std::string(exchange) + " " + key);
  }
  /// try_read_frame's calls, and those that found nothing.
  std::size_t reads = 0, empty_reads = 0;
  int try_read_frame(amqp_frame_t& frame) override {
    ++reads;
    if (broken) return AMQP_STATUS_SOCKET_ERROR;
    if (inbound_.empty()) {
      ++empty_reads;
      return 0;
    }
    current_ = std::move(inbound_.front());
    inbound_.pop_front();
    // As a real socket's: readable while frames are unread (push wrote a byte for each).
    if (char c; pipe_[0] >= 0 && ::read(pipe_[0], &c, 1) != 1) ADD_FAILURE() << "a frame without its byte";
    if (current_->drop) {
      broken = true;
      return current_->silent ? AMQP_STATUS_HEARTBEAT_TIMEOUT : AMQP_STATUS_CONNECTION_CLOSED;
    }
    frame = current_->frame;
    return 1;
  }
  void reply_channel_close_ok(std::uint16_t ch) override {
    rpcs.push_back("channel.close-ok " + std::to_string(ch));
  }
  void reply_connection_close_ok() override {
    rpcs.push_back("connection.close-ok");
    broken = true;
  }

  /// How many RPCs start with `prefix`.
  std::size_t count(const std::string& prefix) const {
    return std::size_t(std::count_if(rpcs.begin(), rpcs.end(),
                                     [&](const std::string& r) { return r.rfind(prefix, 0) == 0; }));
  }

 private:
  /// One frame and the storage its decoded parts point into.
  struct inbound {
    amqp_frame_t frame{};
    bool drop = false;
    bool silent = false;  ///< with drop: the broker sent nothing for two heartbeats
    std::string text1, text2;
    amqp_basic_ack_t ack{};
    amqp_basic_nack_t nack{};
    amqp_basic_deliver_t deliver{};
    amqp_basic_cancel_t cancel{};
    amqp_channel_close_t channel_close{};
    amqp_connection_close_t connection_close{};
    amqp_connection_blocked_t blocked{};
    amqp_basic_properties_t props{};
    amqp_table_entry_t headers[3]{};  ///< a content header's headers
  };
  static amqp_bytes_t bytes(std::string& s) { return amqp_bytes_t{s.size(), s.data()}; }
  inbound& push(std::uint16_t channel, std::uint8_t type) {
    if (pipe_[1] >= 0 && ::write(pipe_[1], "f", 1) != 1) ADD_FAILURE() << "the fake socket is full";
    inbound_.push_back(std::make_unique<inbound>());
    auto& f = *inbound_.back();
    f.frame.frame_type = type;
    f.frame.channel = channel;
    return f;
  }
  inbound& method(std::uint16_t channel, amqp_method_number_t id) {
    auto& f = push(channel, AMQP_FRAME_METHOD);
    f.frame.payload.method.id = id;
    void* decoded = nullptr;
    switch (id) {
      case AMQP_BASIC_ACK_METHOD: decoded = &f.ack; break;
      case AMQP_BASIC_NACK_METHOD: decoded = &f.nack; break;
      case AMQP_BASIC_DELIVER_METHOD: decoded = &f.deliver; break;
      case AMQP_BASIC_CANCEL_METHOD: decoded = &f.cancel; break;
      case AMQP_CHANNEL_CLOSE_METHOD: decoded = &f.channel_close; break;
      case AMQP_CONNECTION_CLOSE_METHOD: decoded = &f.connection_close; break;
      case AMQP_CONNECTION_BLOCKED_METHOD: decoded = &f.blocked; break;
      default: break;
    }
    f.frame.payload.method.decoded = decoded;
    return f;
  }
  result rpc(std::string what) {
    rpcs.push_back(what);
    if (broken) return {what + ": socket is closed"};
    for (auto* refusals : {&refuse_next, &broker_.refuse_next})
      for (auto it = refusals->begin(); it != refusals->end(); ++it) {
        if (what.rfind(it->first, 0) != 0) continue;
        auto r = it->second;
        refusals->erase(it);
        if (r.connection_lost()) broken = true;
        return r;
      }
    return {};
  }

  fake_broker& broker_;
  int pipe_[2] = {-1, -1};
  bool socket_ = false;
  std::deque<std::unique_ptr<inbound>> inbound_;
  std::unique_ptr<inbound> current_;  ///< the frame handed out last: its parts stay valid
};

inline session_opener fake_broker::opener() {
  return [this](const broker_params& params, std::string& error) -> std::unique_ptr<amqp_session> {
    attempts.push_back(params.connection_name);
    if (!refuse_open.empty()) {
      error = refuse_open;
      return nullptr;
    }
    return std::make_unique<fake_session>(*this, params.connection_name);
  };
}

inline fake_session* fake_broker::find(const std::string& suffix) const {
  for (auto it = live.rbegin(); it != live.rend(); ++it) {
    const auto& n = (*it)->name;
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      return *it;
  }
  return nullptr;
}

/// The MQS records `conn` got since the last call, each with its body, as a host reads them.
inline std::vector<std::pair<mqs_record, std::string>> mqs_records(dde::testing::recording_connection& conn) {
  std::vector<std::pair<mqs_record, std::string>> out;
  for (auto& r : conn.take()) {
    auto parsed = parse_mqs_record(r.header);
    EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error());
    if (parsed) out.emplace_back(parsed.value(), std::move(r.body));
  }
  return out;
}

/// The topic the cores' tests use.
constexpr const char* topic = "s.consumer";
using dde::testing::recording_connection;

}  // namespace dde::mqs::testing
