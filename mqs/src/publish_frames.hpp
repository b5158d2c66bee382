#pragma once
/// \file
/// basic.publish frames (method, content header, body) encoded into one buffer, so that a burst of
/// messages reaches the broker in one send() instead of three per message (rabbitmq-c 0.11 writes
/// each frame with a syscall of its own; on this project's machines that was most of the MQS's CPU).

#include <cstdint>
#include <string>
#include <string_view>

#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {

class publish_frames {
 public:
  /// `frame_max`: the connection's negotiated frame size (bodies are split to fit; at least 4096).
  explicit publish_frames(std::uint32_t frame_max);

  /// Appends a basic.publish of `body` to the default exchange with `routing_key` (at most 255
  /// bytes: false and nothing appended otherwise), delivery-mode 1 (transient) or 2 (persistent),
  /// and `props` (as parse_props checked them) in the broker's form (broker_props.hpp: a UUID
  /// message id compacted, `published_us` as the `timestamp` property).
  bool add(std::uint16_t channel, std::string_view routing_key, std::uint8_t delivery_mode,
           std::string_view body, const message_props& props = {});

  const std::string& bytes() const { return out_; }
  bool empty() const { return out_.empty(); }
  std::size_t size() const { return out_.size(); }
  void clear() { out_.clear(); }

 private:
  std::size_t begin_frame(std::uint8_t type, std::uint16_t channel);
  void end_frame(std::size_t start);
  void u8(std::uint8_t v) { out_.push_back(char(v)); }
  void u16(std::uint16_t v);
  void u32(std::uint32_t v);
  void u64(std::uint64_t v);
  void short_string(std::string_view s);
  /// Writes into the u32 placeholder at `at` (big-endian) how many bytes follow it.
  void fill_size(std::size_t at);

  std::uint32_t frame_max_;
  std::string out_;
};

}  // namespace dde::mqs
