#pragma once
// The publishing connection's writes. On plain TCP a burst's basic.publish frames are encoded into
// one buffer and go out in one write (publish_frames.hpp); over amqps there is no buffer and
// rabbitmq-c writes each frame through OpenSSL. On the io_context no write waits: what a full
// socket does not take stays here, in order, until the reactor says it has room, and nothing else
// may reach the socket before it (a heartbeat or an RPC of rabbitmq-c's would land inside a frame).

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "amqp_session.hpp"
#include "mqs_metrics.hpp"
#include "publish_frames.hpp"

namespace dde::mqs {

class frame_writer {
 public:
  frame_writer();
  /// Writes leave what the socket does not take in unsent() rather than wait (the io_context loop).
  void set_nonblocking() { nonblocking_ = true; }
  /// A new connection: plain TCP batches frames, amqps does not.
  void connected(const amqp_session& session);
  /// The connection went: what waited in the batch and unwritten goes with it.
  void clear();
  /// Frames are batched here (plain TCP): publish with add(); otherwise through the session.
  bool batching() const { return batch_ != nullptr; }
  /// Appends a publish to the batch (see publish_frames::add); false when its topic is too long.
  bool add(std::uint16_t channel, std::string_view topic, std::uint8_t delivery_mode, std::string_view body,
           const message_props& props) {
    return batch_->add(channel, topic, delivery_mode, body, props);
  }
  /// The batch's size in bytes.
  std::size_t batched() const { return batch_ ? batch_->size() : 0; }
  /// Writes the batch; the connection's error, if the write failed.
  std::string flush(amqp_session& session);
  /// Writes what waits unwritten; the connection's error, if the write failed.
  std::string write_unsent(amqp_session& session);
  /// Frames wait for room in the socket.
  bool pending() const { return !unsent_.empty(); }

 private:
  void count() { gauge_.set(double(unsent_.size())); }

  std::unique_ptr<publish_frames> batch_;
  std::string unsent_;
  bool nonblocking_ = false;
  /// unsent_'s size, as dde_mqs_publish_unwritten_bytes.
  metric_cell& gauge_;
};

}  // namespace dde::mqs
