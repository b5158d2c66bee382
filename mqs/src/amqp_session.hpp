#pragma once
// One AMQP connection over rabbitmq-c 0.11, with the few RPCs the MQS needs. rabbitmq-c blocks
// and is not thread-safe: one thread (the enqueuer's or the dequeuer's) owns a session.

#include <amqp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <string_view>

#include "dde/mqs/queue_spec.hpp"

namespace dde::mqs {

struct broker_params {
  std::string host;
  std::uint16_t port = 5672;
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

  /// Connects and logs in; nullptr and `error` on failure.
  static std::unique_ptr<amqp_session> open(const broker_params& params, std::string& error);
  ~amqp_session();
  amqp_session(const amqp_session&) = delete;
  amqp_session& operator=(const amqp_session&) = delete;

  int fd() const { return amqp_get_sockfd(state_); }
  std::uint16_t channel_max() const;
  /// The connection is dead: do not attempt a graceful close.
  void mark_broken() { broken_ = true; }
  /// True when a frame can be read without touching the socket.
  bool buffered() const { return amqp_frames_enqueued(state_) || amqp_data_in_buffer(state_); }
  /// Plain TCP (not amqps): whole frames encoded by the caller may be written to the socket.
  bool plain() const { return plain_; }
  std::uint32_t frame_max() const { return std::uint32_t(amqp_get_frame_max(state_)); }
  /// What basic.publish sends with a message (an empty field is left out).
  struct publish_props {
    std::uint8_t delivery_mode = 1;  ///< 2: persistent
    std::string_view content_type, message_id, app_id, expiration;
    const std::vector<std::pair<std::string, std::string>>* headers = nullptr;  ///< long-string values
  };
  /// basic.publish of `body` to `exchange` ("" = the default one) with `routing_key`, without waiting
  /// for anything; why it failed (the connection is then broken) or empty.
  std::string publish(std::uint16_t channel, std::string_view exchange, std::string_view routing_key,
                      const publish_props& props, std::string_view body);
  /// basic.ack / basic.reject; why it failed (the connection is then broken) or empty.
  std::string ack(std::uint16_t channel, std::uint64_t tag, bool multiple);
  std::string reject(std::uint16_t channel, std::uint64_t tag, bool requeue);
  /// What a rabbitmq-c status code (e.g. try_read_frame's) means.
  static std::string status_text(int status) { return amqp_error_string2(status); }
  /// Lets rabbitmq-c free the memory of frames already handled (between bursts).
  void release_buffers();
  /// Writes `bytes` (whole frames) to a plain connection's socket, waiting while it is full; an
  /// error (the connection is then broken) or empty.
  std::string write_frames(const std::string& bytes);

  result open_channel(std::uint16_t channel);
  result close_channel(std::uint16_t channel);
  result confirm_select(std::uint16_t channel);
  result qos(std::uint16_t channel, std::uint16_t prefetch);
  /// basic.consume; `no_ack`: the broker counts a message done as it sends it.
  result consume(std::uint16_t channel, const std::string& queue, const std::string& consumer_tag,
                 bool no_ack = false);
  result cancel(std::uint16_t channel, const std::string& consumer_tag);
  result declare(std::uint16_t channel, const queue_spec& spec, bool passive);
  /// Passive queue.declare of `queue`: its ready messages and consumers. A missing queue closes `channel` (404).
  result queue_depth(std::uint16_t channel, const std::string& queue, std::uint32_t& messages,
                     std::uint32_t& consumers);
  /// Declares exchange `name` of `type` (not auto-deleted, not internal).
  result declare_exchange(std::uint16_t channel, std::string_view name, const char* type, bool durable);
  /// Declares a server-named, exclusive, auto-delete queue; its name goes to `name`.
  result declare_private_queue(std::uint16_t channel, std::string& name);
  result bind(std::uint16_t channel, const std::string& queue, std::string_view exchange,
              const std::string& routing_key);
  /// Declares `spec`; when the queue exists with other arguments (406) reopens `channel` and uses
  /// the queue as it is (passive declare), setting `used_existing`.
  result declare_or_use(std::uint16_t channel, const queue_spec& spec, bool& used_existing);

  /// Reads one frame if one is ready, without waiting (heartbeats are serviced here):
  /// 1 read, 0 nothing ready, < 0 an AMQP status (the connection is broken).
  int try_read_frame(amqp_frame_t& frame);
  /// Answers a channel.close / connection.close the broker sent.
  void reply_channel_close_ok(std::uint16_t channel);
  void reply_connection_close_ok();

  /// "320 CONNECTION_FORCED - ..." from a close method's arguments.
  static std::string describe_close(const amqp_method_t& method);

 private:
  explicit amqp_session(amqp_connection_state_t state) : state_(state) {}
  result check(const amqp_rpc_reply_t& reply, std::uint16_t channel, const char* what);

  amqp_connection_state_t state_;
  bool broken_ = false;
  bool plain_ = false;
};

}  // namespace dde::mqs
