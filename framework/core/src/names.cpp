#include "dde/names.hpp"

#include <pthread.h>
#include <uuid/uuid.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>

namespace dde {

namespace {

// What each byte is in a name or a topic: a name's character, a topic's dot, or neither. One table
// lookup a byte: the host checks every delivery's topic (about 220 instructions a delivery with a
// comparison chain per character and a find per part; callgrind of a consuming isolate system).
enum : std::uint8_t { other = 0, name_char = 1, dot = 2 };
constexpr auto char_classes = [] {
  std::array<std::uint8_t, 256> t{};
  for (int c = 'a'; c <= 'z'; ++c) t[std::size_t(c)] = name_char;
  for (int c = 'A'; c <= 'Z'; ++c) t[std::size_t(c)] = name_char;
  for (int c = '0'; c <= '9'; ++c) t[std::size_t(c)] = name_char;
  t['_'] = t['-'] = name_char;
  t['.'] = dot;
  return t;
}();
constexpr std::size_t max_name = 100;

std::uint8_t class_of(char c) { return char_classes[static_cast<unsigned char>(c)]; }

}  // namespace

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > max_name) return false;
  for (char c : name)
    if (class_of(c) != name_char) return false;
  return true;
}

std::optional<address> parse_address(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto system = text.substr(0, slash);
  auto isolate = text.substr(slash + 1);
  if (!valid_name(system) || !valid_name(isolate)) return std::nullopt;
  return address{std::string(system), std::string(isolate)};
}

bool valid_topic(std::string_view topic) {
  // 2 to 4 names joined by dots, each 1 to max_name characters.
  int parts = 1;
  std::size_t part = 0;
  for (char c : topic) {
    switch (class_of(c)) {
      case name_char:
        if (++part > max_name) return false;
        break;
      case dot:
        if (part == 0 || ++parts > 4) return false;
        part = 0;
        break;
      default: return false;
    }
  }
  return part > 0 && parts >= 2;
}

std::string reply_topic(std::string_view instance_id) { return "dde.reply." + std::string(instance_id); }

std::string dead_letter_topic(std::string_view topic) { return "dde.dead." + std::string(topic); }

std::string delay_topic(std::string_view topic, long long delay_ms) {
  return "dde.delay-" + std::to_string(delay_ms) + "." + std::string(topic);
}

std::optional<delay_queue> parse_delay_topic(std::string_view name) {
  constexpr std::string_view prefix = "dde.delay-";
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  auto rest = name.substr(prefix.size());
  auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 8) return std::nullopt;
  long long ms = 0;
  for (char c : rest.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    ms = ms * 10 + (c - '0');
  }
  auto topic = rest.substr(dot + 1);
  if (ms < 1 || ms > 86400000 || !valid_topic(name) || !valid_topic(topic)) return std::nullopt;
  return delay_queue{ms, std::string(topic)};
}

std::string_view to_string(delivery_mode mode) {
  switch (mode) {
    case delivery_mode::at_least_once: return "at-least-once";
    case delivery_mode::at_most_once: return "at-most-once";
    case delivery_mode::reply: return "reply";
  }
  return "at-least-once";
}

std::optional<delivery_mode> parse_delivery_mode(std::string_view text) {
  if (text == "at-least-once") return delivery_mode::at_least_once;
  if (text == "at-most-once") return delivery_mode::at_most_once;
  if (text == "reply") return delivery_mode::reply;
  return std::nullopt;
}

namespace {

// Bumped in a forked child, so a child does not repeat its parent's sequence of ids.
std::atomic<unsigned> fork_generation{0};

struct uuid_source {
  std::mt19937_64 bits;
  unsigned generation = ~0u;

  void reseed() {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    bits.seed(seq);
    generation = fork_generation.load(std::memory_order_relaxed);
  }
};

}  // namespace

std::string new_uuid() {
  // libuuid's uuid_generate_random asks the kernel (getrandom) for every id: a system call per
  // message sent. Ids name messages and instances, they guard nothing, so each thread draws them
  // from its own generator, seeded once from the kernel (and again in a forked child).
  static const int registered = pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1); });
  (void)registered;
  thread_local uuid_source source;
  if (source.generation != fork_generation.load(std::memory_order_relaxed)) source.reseed();
  uuid_t raw;
  std::uint64_t hi = source.bits(), lo = source.bits();
  std::memcpy(raw, &hi, 8);
  std::memcpy(raw + 8, &lo, 8);
  raw[6] = static_cast<unsigned char>((raw[6] & 0x0f) | 0x40);  // version 4
  raw[8] = static_cast<unsigned char>((raw[8] & 0x3f) | 0x80);  // RFC 4122 variant
  char text[37];
  uuid_unparse_lower(raw, text);
  return text;
}

}  // namespace dde
