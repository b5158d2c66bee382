#include "dde/mqs/broker_props.hpp"

#include <array>

namespace dde::mqs {
namespace {

constexpr char compact_mark = '~';
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view hex = "0123456789abcdef";
constexpr std::size_t uuid_text = 36, compact_text = 1 + 22;

bool is_dash_at(std::size_t i) { return i == 8 || i == 13 || i == 18 || i == 23; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // uppercase too: such an id is left as it is, so it reads back unchanged
}

int alphabet_value(char c) {
  auto at = alphabet.find(c);
  return at == std::string_view::npos ? -1 : int(at);
}

}  // namespace

std::string_view broker_message_id(std::string_view id, std::array<char, compact_text>& out) {
  if (id.size() != uuid_text) return id;
  std::array<std::uint8_t, 16> bytes{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (is_dash_at(i)) {
      if (id[i] != '-') return id;
      continue;
    }
    int v = hex_value(id[i]);
    if (v < 0) return id;
    bytes[n / 2] = std::uint8_t(bytes[n / 2] | (n % 2 == 0 ? v << 4 : v));
    ++n;
  }
  std::size_t at = 0;
  out[at++] = compact_mark;
  // 128 bits in 6-bit groups: 21 full groups and 2 bits left, the last character's high bits.
  std::uint32_t acc = 0;
  int bits = 0;
  for (auto b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out[at++] = alphabet[(acc >> bits) & 63];
    }
  }
  out[at] = alphabet[(acc << (6 - bits)) & 63];
  return std::string_view(out.data(), out.size());
}

std::string broker_message_id(std::string_view id) {
  std::array<char, compact_text> storage;
  return std::string(broker_message_id(id, storage));
}

std::string host_message_id(std::string_view broker_id) {
  if (broker_id.size() != compact_text || broker_id[0] != compact_mark) return std::string(broker_id);
  std::array<std::uint8_t, 16> bytes{};
  std::uint32_t acc = 0;
  int bits = 0;
  std::size_t n = 0;
  for (std::size_t i = 1; i < broker_id.size(); ++i) {
    int v = alphabet_value(broker_id[i]);
    if (v < 0) return std::string(broker_id);
    acc = (acc << 6) | std::uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < bytes.size()) bytes[n++] = std::uint8_t(acc >> bits);
    }
  }
  // The last character carries 2 bits of data and 4 of padding, which a compacted id leaves 0.
  if (n != bytes.size() || (acc & ((1u << bits) - 1)) != 0) return std::string(broker_id);
  std::string out;
  out.reserve(uuid_text);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(hex[bytes[i] >> 4]);
    out.push_back(hex[bytes[i] & 15]);
  }
  return out;
}

std::uint64_t stamp_of_timestamp(std::uint64_t timestamp) {
  // Each bound is year 33658 in the smaller unit and 1970 + 11.6 days or 31.7 years in the larger:
  // no stamp of these times is ambiguous.
  constexpr std::uint64_t seconds_below = 1'000'000'000'000, milliseconds_below = 1'000'000'000'000'000;
  if (timestamp < seconds_below) return timestamp * 1'000'000;
  if (timestamp < milliseconds_below) return timestamp * 1'000;
  return timestamp;
}

}  // namespace dde::mqs
