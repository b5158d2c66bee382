#pragma once
// The rabbitmq-c amqp_session (rabbitmq_session.cpp: the connection, channels, declares, publish and acks;
// rabbitmq_session_messages.cpp: basic.get, purge, nack and waiting for confirms, which the dead-letter
// desk uses). Private to dde_mqs.
#include <amqp.h>

#include <string>
#include <string_view>

#include "amqp_session.hpp"

namespace dde::mqs {

inline std::string bytes_text(amqp_bytes_t b) {
  return std::string(static_cast<const char*>(b.bytes), b.len);
}
inline amqp_bytes_t bytes_of(std::string_view s) {
  return amqp_bytes_t{s.size(), const_cast<char*>(s.data())};
}

/// The real connection: rabbitmq-c 0.11, plain TCP or TLS.
class rabbitmq_session final : public amqp_session {
 public:
  explicit rabbitmq_session(amqp_connection_state_t state) : state_(state) {}
  /// Connects to the one node `p.host`:`p.port` and logs in; nullptr and `error` on failure.
  static std::unique_ptr<rabbitmq_session> open_node(const broker_params& p, std::string& error);
  ~rabbitmq_session() override;

  int fd() const override { return amqp_get_sockfd(state_); }
  std::uint16_t channel_max() const override;
  void mark_broken() override { broken_ = true; }
  bool buffered() const override { return amqp_frames_enqueued(state_) || amqp_data_in_buffer(state_); }
  bool drained() const override;
  bool plain() const override { return plain_; }
  std::uint32_t frame_max() const override { return std::uint32_t(amqp_get_frame_max(state_)); }
  std::string publish(std::uint16_t channel, std::string_view exchange, std::string_view routing_key,
                      const publish_props& props, std::string_view body) override;
  std::string ack(std::uint16_t channel, std::uint64_t tag, bool multiple) override;
  std::string reject(std::uint16_t channel, std::uint64_t tag, bool requeue) override;
  void release_buffers() override { amqp_maybe_release_buffers(state_); }
  std::string write_frames(std::string_view bytes, std::size_t* written) override;
  result open_channel(std::uint16_t channel) override;
  result close_channel(std::uint16_t channel) override;
  result confirm_select(std::uint16_t channel) override;
  result qos(std::uint16_t channel, std::uint16_t prefetch) override;
  result consume(std::uint16_t channel, const std::string& queue, const std::string& consumer_tag,
                 bool no_ack) override;
  result cancel(std::uint16_t channel, const std::string& consumer_tag) override;
  result declare(std::uint16_t channel, const queue_spec& spec, bool passive) override;
  result queue_depth(std::uint16_t channel, const std::string& queue, std::uint32_t& messages,
                     std::uint32_t& consumers) override;
  result declare_exchange(std::uint16_t channel, std::string_view name, const char* type,
                          bool durable) override;
  result declare_private_queue(std::uint16_t channel, std::string& name) override;
  result bind(std::uint16_t channel, const std::string& queue, std::string_view exchange,
              const std::string& routing_key) override;
  result get_message(std::uint16_t channel, const std::string& queue, dead_message& out,
                     bool& empty) override;
  result purge(std::uint16_t channel, const std::string& queue, std::uint32_t& count) override;
  std::string nack(std::uint16_t channel, std::uint64_t tag, bool multiple, bool requeue) override;
  result wait_confirms(std::uint16_t channel, std::uint64_t last_seq,
                       std::chrono::milliseconds timeout) override;
  int try_read_frame(amqp_frame_t& frame) override;
  void reply_channel_close_ok(std::uint16_t channel) override;
  void reply_connection_close_ok() override;

  bool broken_ = false;
  bool plain_ = false;

 private:
  result check(const amqp_rpc_reply_t& reply, std::uint16_t channel, const char* what);

  amqp_connection_state_t state_;
};

}  // namespace dde::mqs
