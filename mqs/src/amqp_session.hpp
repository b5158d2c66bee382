#pragma once
// The MQS's AMQP connections: the interface its broker threads use, and what they are opened with.

#include <amqp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dde/core/metrics.hpp"
#include "dde/mqs/config.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dead_letter.hpp"

namespace dde::mqs {

struct broker_params {
  std::string host;  ///< with `nodes` empty: the one node
  std::uint16_t port = 5672;
  /// The nodes of a cluster, tried in turn from `first_node` until one lets the session in.
  std::vector<broker_node> nodes;
  std::size_t first_node = 0;
  std::string user;
  std::string password;
  std::string vhost;
  std::uint16_t heartbeat_s = 30;
  std::string connection_name;  ///< shown by `rabbitmqctl list_connections`
  bool tls = false;             ///< amqps: TLS, the broker verified against `ca_file` and its host name
  std::string ca_file = {};     ///< PEM CA for the broker's certificate
  std::string cert_file = {};   ///< PEM client certificate (with `key_file`), for brokers that ask for one
  std::string key_file = {};
};

/// One AMQP connection: the few operations the MQS needs. The broker threads (enqueuer,
/// dequeuer, queue inspector) see only this interface; `open` gives the real one over rabbitmq-c
/// 0.11 (rabbitmq_session.cpp), tests give a fake (tests/unit/fake_amqp_session.hpp). rabbitmq-c blocks
/// and is not thread-safe: one thread owns a session.
class amqp_session {
 public:
  /// Outcome of an RPC. When only the channel failed the broker closed it (close-ok is sent);
  /// any other error means the connection is unusable.
  struct result {
    std::string error;
    bool channel_closed = false;
    int code = 0;  ///< AMQP reply code of a channel or connection close
    bool ok() const { return error.empty(); }
    bool connection_lost() const { return !ok() && !channel_closed; }
  };
  /// What basic.publish sends with a message (an empty field is left out).
  struct publish_props {
    std::uint8_t delivery_mode = 1;  ///< 2: persistent
    std::string_view content_type, message_id, app_id, expiration;
    const std::vector<std::pair<std::string, std::string>>* headers = nullptr;  ///< long-string values
    std::uint64_t published_us =
        0;  ///< the publish stamp (0: none): the `timestamp` property (broker_props.hpp)
  };

  /// Connects to the broker over rabbitmq-c and logs in; nullptr and `error` on failure.
  static std::unique_ptr<amqp_session> open(const broker_params& params, std::string& error);
  amqp_session() : serial_(next_serial()) {}
  virtual ~amqp_session();
  amqp_session(const amqp_session&) = delete;
  amqp_session& operator=(const amqp_session&) = delete;

  /// The socket to poll for reading (-1: none, e.g. a fake).
  virtual int fd() const = 0;
  /// Names this session among all of the process's, past ones included (fds and addresses are
  /// reused; a watch of the socket must not outlive its session).
  std::uint64_t serial() const { return serial_; }
  /// The broker node this connection is on, and its place in broker_params::nodes.
  const std::string& node() const { return node_; }
  std::size_t node_index() const { return node_index_; }
  virtual std::uint16_t channel_max() const = 0;
  /// The connection is dead: do not attempt a graceful close.
  virtual void mark_broken() = 0;
  /// True when a frame can be read without touching the socket.
  virtual bool buffered() const = 0;
  /// True when a read now would find nothing: nothing buffered and no byte waiting on the socket.
  /// A loop woken by the socket stops reading there instead of reading until the socket says
  /// EAGAIN (rabbitmq-c then polls it too: two syscalls a wake-up for nothing). False when it
  /// cannot tell (amqps: OpenSSL may hold decrypted records the socket no longer shows), and then
  /// the caller reads until nothing comes.
  virtual bool drained() const { return false; }
  /// Plain TCP (not amqps): whole frames encoded by the caller may be written with write_frames.
  virtual bool plain() const = 0;
  virtual std::uint32_t frame_max() const = 0;
  /// basic.publish of `body` to `exchange` ("" = the default one) with `routing_key`, without waiting
  /// for anything; why it failed (the connection is then broken) or empty.
  virtual std::string publish(std::uint16_t channel, std::string_view exchange, std::string_view routing_key,
                              const publish_props& props, std::string_view body) = 0;
  /// basic.ack / basic.reject; why it failed (the connection is then broken) or empty.
  virtual std::string ack(std::uint16_t channel, std::uint64_t tag, bool multiple) = 0;
  virtual std::string reject(std::uint16_t channel, std::uint64_t tag, bool requeue) = 0;
  /// Lets the connection free the memory of frames already handled (between bursts).
  virtual void release_buffers() = 0;
  /// Writes `bytes` (whole frames) to a plain connection's socket, waiting while it is full; with
  /// `written`, only what the socket takes now, its size there. An error (the connection is then
  /// broken) or empty.
  virtual std::string write_frames(std::string_view bytes, std::size_t* written = nullptr) = 0;

  virtual result open_channel(std::uint16_t channel) = 0;
  virtual result close_channel(std::uint16_t channel) = 0;
  virtual result confirm_select(std::uint16_t channel) = 0;
  virtual result qos(std::uint16_t channel, std::uint16_t prefetch) = 0;
  /// basic.consume; `no_ack`: the broker counts a message done as it sends it.
  virtual result consume(std::uint16_t channel, const std::string& queue, const std::string& consumer_tag,
                         bool no_ack = false) = 0;
  virtual result cancel(std::uint16_t channel, const std::string& consumer_tag) = 0;
  virtual result declare(std::uint16_t channel, const queue_spec& spec, bool passive) = 0;
  /// Passive queue.declare of `queue`: its ready messages and consumers. A missing queue closes `channel`
  /// (404).
  virtual result queue_depth(std::uint16_t channel, const std::string& queue, std::uint32_t& messages,
                             std::uint32_t& consumers) = 0;
  /// Declares exchange `name` of `type` (not auto-deleted, not internal).
  virtual result declare_exchange(std::uint16_t channel, std::string_view name, const char* type,
                                  bool durable) = 0;
  /// Declares a server-named, exclusive, auto-delete queue; its name goes to `name`.
  virtual result declare_private_queue(std::uint16_t channel, std::string& name) = 0;
  virtual result bind(std::uint16_t channel, const std::string& queue, std::string_view exchange,
                      const std::string& routing_key) = 0;
  /// Declares `spec`; when the queue exists with other arguments (406) reopens `channel` and uses
  /// the queue as it is (passive declare), setting `used_existing`.
  result declare_or_use(std::uint16_t channel, const queue_spec& spec, bool& used_existing);

  // The dead-letter desk's operations (dead_letters.cpp). Not pure: the fakes of the other broker
  // threads need not know them; the defaults fail.
  /// basic.get of one message of `queue`, to be acked or rejected by its `out.tag`; `empty` when
  /// the queue had none ready.
  virtual result get_message(std::uint16_t channel, const std::string& queue, dead_message& out, bool& empty);
  /// queue.purge: the ready messages of `queue` are dropped; how many goes to `count`.
  virtual result purge(std::uint16_t channel, const std::string& queue, std::uint32_t& count);
  /// basic.nack; why it failed (the connection is then broken) or empty.
  virtual std::string nack(std::uint16_t channel, std::uint64_t tag, bool multiple, bool requeue);
  /// Waits (at most `timeout`) until the broker confirmed every publish up to `last_seq` on a channel
  /// in confirm mode; an error when it nacks one, closes the channel or stays silent.
  virtual result wait_confirms(std::uint16_t channel, std::uint64_t last_seq,
                               std::chrono::milliseconds timeout);

  /// Reads one frame if one is ready, without waiting (heartbeats are serviced here):
  /// 1 read, 0 nothing ready, < 0 an AMQP status (the connection is broken). The frame's decoded
  /// parts stay valid until the next read.
  virtual int try_read_frame(amqp_frame_t& frame) = 0;
  /// Answers a channel.close / connection.close the broker sent.
  virtual void reply_channel_close_ok(std::uint16_t channel) = 0;
  virtual void reply_connection_close_ok() = 0;

  /// What a rabbitmq-c status code (e.g. try_read_frame's) means.
  static std::string status_text(int status) { return amqp_error_string2(status); }
  /// "320 CONNECTION_FORCED - ..." from a close method's arguments.
  static std::string describe_close(const amqp_method_t& method);

 private:
  static std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> last{0};
    return ++last;
  }
  /// Records the node this new connection is on (its place in broker_params::nodes) and counts it
  /// in that node's connection gauge until it closes.
  void settle_on(std::string node, std::size_t index);
  std::uint64_t serial_;
  std::string node_;
  std::size_t node_index_ = 0;
  metric_cell* on_node_ = nullptr;  ///< the node's connection gauge, while this connection counts in it
};

/// What the broker threads connect with, from the MQS's settings: every node of the address list.
broker_params broker_params_for(const config& cfg, std::string connection_name, std::uint16_t heartbeat_s);
/// The node a connection that was on node `index` of `count` tries first when it is lost.
inline std::size_t next_node(std::size_t index, std::size_t count) { return count ? (index + 1) % count : 0; }

/// Opens the connections of a broker thread: `amqp_session::open`, or a test's fake broker.
using session_opener = std::function<std::unique_ptr<amqp_session>(const broker_params&, std::string& error)>;

/// What a broker thread connects with and reads the time from. The real ones by default; a test
/// gives a fake broker and a clock it moves, and drives the thread's turns itself.
struct broker_env {
  session_opener open = &amqp_session::open;
  std::function<std::chrono::steady_clock::time_point()> now = &std::chrono::steady_clock::now;
  /// The wall clock a publish is stamped with (the `timestamp` property): receivers in other processes,
  /// on other machines, compare it with theirs.
  std::function<std::chrono::system_clock::time_point()> wall_now = &std::chrono::system_clock::now;
};

}  // namespace dde::mqs
