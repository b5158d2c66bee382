#include "publish_frames.hpp"

#include <algorithm>
#include <array>

#include "broker_props.hpp"

namespace dde::mqs {
namespace {

// AMQP 0-9-1 (section 4.2.3 and the class reference).
constexpr std::uint8_t frame_method = 1;
constexpr std::uint8_t frame_header = 2;
constexpr std::uint8_t frame_body = 3;
constexpr std::uint8_t frame_end = 0xCE;
constexpr std::size_t frame_overhead = 8;  // type, channel, size; frame-end
constexpr std::uint16_t basic_class = 60;
constexpr std::uint16_t basic_publish = 40;
// Property flags, in the order their values follow the flags.
constexpr std::uint16_t content_type_flag = 0x8000;
constexpr std::uint16_t headers_flag = 0x2000;
constexpr std::uint16_t delivery_mode_flag = 0x1000;
constexpr std::uint16_t message_id_flag = 0x0080;
constexpr std::uint16_t timestamp_flag = 0x0040;
constexpr std::uint16_t app_id_flag = 0x0008;

}  // namespace

publish_frames::publish_frames(std::uint32_t frame_max)
    : frame_max_(std::max<std::uint32_t>(frame_max, 4096)) {}

// Big-endian, each written with one append: the frames of every message publish go through these.
void publish_frames::u16(std::uint16_t v) {
  const char b[2] = {char(v >> 8), char(v)};
  out_.append(b, sizeof b);
}

void publish_frames::u32(std::uint32_t v) {
  const char b[4] = {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
  out_.append(b, sizeof b);
}

void publish_frames::u64(std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = char(v >> (56 - 8 * i));
  out_.append(b, sizeof b);
}

void publish_frames::short_string(std::string_view s) {
  s = s.substr(0, 255);
  u8(std::uint8_t(s.size()));
  out_.append(s);
}

std::size_t publish_frames::begin_frame(std::uint8_t type, std::uint16_t channel) {
  u8(type);
  u16(channel);
  std::size_t start = out_.size();
  u32(0);  // the payload size, once known
  return start;
}

void publish_frames::fill_size(std::size_t at) {
  auto size = std::uint32_t(out_.size() - at - 4);
  for (int i = 0; i < 4; ++i) out_[at + std::size_t(i)] = char(std::uint8_t(size >> (24 - 8 * i)));
}

void publish_frames::end_frame(std::size_t start) {
  fill_size(start);
  u8(frame_end);
}

bool publish_frames::add(std::uint16_t channel, std::string_view routing_key, std::uint8_t delivery_mode,
                         std::string_view body, const message_props& props) {
  if (routing_key.size() > 255) return false;
  auto f = begin_frame(frame_method, channel);
  u16(basic_class);
  u16(basic_publish);
  u16(0);  // reserved-1 (ticket)
  u8(0);   // exchange: "" (the default exchange)
  u8(std::uint8_t(routing_key.size()));
  out_.append(routing_key);
  u8(0);  // mandatory, immediate: no
  end_frame(f);

  f = begin_frame(frame_header, channel);
  u16(basic_class);
  u16(0);  // weight
  u64(body.size());
  // The broker's form of the properties (broker_props.hpp): a compacted id, the stamp as `timestamp`.
  std::array<char, 23> compact_id;
  std::string_view message_id = broker_message_id(props.message_id, compact_id);
  std::uint16_t flags = delivery_mode_flag;
  if (!props.content_type.empty()) flags |= content_type_flag;
  if (!props.headers.empty()) flags |= headers_flag;
  if (!message_id.empty()) flags |= message_id_flag;
  if (props.published_us) flags |= timestamp_flag;
  if (!props.app_id.empty()) flags |= app_id_flag;
  u16(flags);
  if (!props.content_type.empty()) short_string(props.content_type);
  if (!props.headers.empty()) {  // a field table of long strings
    std::size_t table = out_.size();
    u32(0);
    for (auto& [name, value] : props.headers) {
      short_string(name);
      u8('S');
      u32(std::uint32_t(value.size()));
      out_.append(value);
    }
    fill_size(table);
  }
  u8(delivery_mode);
  if (!message_id.empty()) short_string(message_id);
  if (props.published_us) u64(props.published_us);
  if (!props.app_id.empty()) short_string(props.app_id);
  end_frame(f);

  const std::size_t chunk = frame_max_ - frame_overhead;
  for (std::size_t at = 0; at < body.size(); at += chunk) {
    f = begin_frame(frame_body, channel);
    out_.append(body.substr(at, chunk));
    end_frame(f);
  }
  return true;
}

}  // namespace dde::mqs
