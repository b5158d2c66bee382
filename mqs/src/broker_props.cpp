#include "broker_props.hpp"

#include <array>
#include <cstdint>

namespace dde::mqs {
namespace {

constexpr char compact_mark = '~';
// base64url of a fixed 16 bytes, written out rather than through OpenSSL's EVP_EncodeBlock and
// EVP_DecodeBlock (as dde::base64_encode is): host_message_id runs for every delivery, and through
// EVP (the alphabet swapped, the padding added and checked) it took 79 ns a call here against 40.
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr std::string_view hex = "0123456789abcdef";
constexpr std::size_t uuid_text = 36, compact_text = 1 + 22;

// In a canonical UUID's text: where its dashes are, and where each of its 16 bytes' two hex digits start.
constexpr std::array<std::size_t, 4> dashes{8, 13, 18, 23};
constexpr std::array<std::size_t, 16> byte_at{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};

/// Each byte's value as a digit of `digits`, -1 for a byte that is not one: one lookup a character.
constexpr std::array<std::int8_t, 256> values_of(std::string_view digits) {
  std::array<std::int8_t, 256> t{};
  t.fill(-1);
  for (std::size_t i = 0; i < digits.size(); ++i) t[static_cast<unsigned char>(digits[i])] = std::int8_t(i);
  return t;
}

constexpr auto hex_values = values_of(hex), alphabet_values = values_of(alphabet);

/// A lowercase hex digit's value; -1 for anything else, uppercase too: such an id is left as it is,
/// so it reads back unchanged.
int hex_value(char c) { return hex_values[static_cast<unsigned char>(c)]; }

int alphabet_value(char c) { return alphabet_values[static_cast<unsigned char>(c)]; }

}  // namespace

std::string_view broker_message_id(std::string_view id, std::array<char, compact_text>& out) {
  if (id.size() != uuid_text) return id;
  for (auto dash : dashes)
    if (id[dash] != '-') return id;
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    int high = hex_value(id[byte_at[i]]), low = hex_value(id[byte_at[i] + 1]);
    if ((high | low) < 0) return id;
    bytes[i] = std::uint8_t(high << 4 | low);
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
  // Written into a buffer, then one string: this runs for every message delivered.
  // The same layout broker_message_id reads.
  std::array<char, uuid_text> out;
  for (auto dash : dashes) out[dash] = '-';
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    out[byte_at[i]] = hex[bytes[i] >> 4];
    out[byte_at[i] + 1] = hex[bytes[i] & 15];
  }
  return std::string(out.data(), out.size());
}

std::uint64_t stamp_of_timestamp(std::uint64_t timestamp) {
  // Each bound is year 33658 in the smaller unit and 1970 + 11.6 days or 31.7 years in the larger:
  // no stamp of these times is ambiguous.
  constexpr std::uint64_t seconds_below = 1'000'000'000'000, milliseconds_below = 1'000'000'000'000'000;
  if (timestamp < seconds_below) return timestamp * 1'000'000;
  if (timestamp < milliseconds_below) return timestamp * 1'000;
  return timestamp;
}

void mark_resent(message_props& props) {
  for (auto& [key, value] : props.headers)
    if (key == resent_header) return;
  props.headers.emplace_back(std::string(resent_header), "1");
}

bool take_resent_mark(message_props& props) {
  return std::erase_if(props.headers, [](const auto& h) { return h.first == resent_header; }) > 0;
}

}  // namespace dde::mqs
