#include "dde/mqs/queue_spec.hpp"

namespace dde::mqs {
namespace {

bool is_dead_letter_queue(std::string_view topic) { return topic.rfind("dde.dead.", 0) == 0; }

queue_spec dead_letter_queue(std::string name, const quorum_placement& placement) {
  queue_spec s;
  s.name = std::move(name);
  s.durable = true;
  s.quorum = true;
  s.placement = placement;
  return s;
}

constexpr std::string_view lease_prefix = "dde.lease-";
constexpr std::int64_t max_lease_ms = 24ll * 3600 * 1000;

}  // namespace

std::string lease_topic(std::string_view mqs_id, std::int64_t ttl_ms, std::string_view topic) {
  return std::string(lease_prefix) + std::to_string(ttl_ms) + "-" + std::string(mqs_id) + "." +
         std::string(topic);
}

std::optional<lease_queue> parse_lease_topic(std::string_view name) {
  if (name.substr(0, lease_prefix.size()) != lease_prefix) return std::nullopt;
  auto rest = name.substr(lease_prefix.size());
  auto dash = rest.find('-');
  if (dash == std::string_view::npos || dash == 0 || dash > 8) return std::nullopt;
  std::int64_t ms = 0;
  for (char c : rest.substr(0, dash)) {
    if (c < '0' || c > '9') return std::nullopt;
    ms = ms * 10 + (c - '0');
  }
  auto dot = rest.find('.', dash);
  if (dot == std::string_view::npos || dot == dash + 1) return std::nullopt;
  auto topic = rest.substr(dot + 1);
  if (ms < 1 || ms > max_lease_ms || !valid_topic(name) || !valid_topic(topic)) return std::nullopt;
  return lease_queue{ms, std::string(topic)};
}

queue_spec spec_for(std::string_view topic, delivery_mode mode, const quorum_placement& placement) {
  if (is_dead_letter_queue(topic)) return dead_letter_queue(std::string(topic), placement);
  if (auto delay = parse_delay_topic(topic)) {
    queue_spec s = dead_letter_queue(std::string(topic), placement);
    s.message_ttl_ms = delay->delay_ms;
    s.dead_letter_queue = delay->topic;
    s.dead_letter_at_least_once = true;
    // Gone once unused: a delay queue has no consumer, and the enqueuer declares it again when it
    // publishes 30 s or more after its last declaration, so it lives at least 2 delays + 30 s past
    // its last message: every message has come back by then.
    s.expires_ms = 2 * delay->delay_ms + 60000;
    return s;
  }
  if (auto lease = parse_lease_topic(topic)) {
    queue_spec s = dead_letter_queue(std::string(topic), placement);
    s.message_ttl_ms = lease->ttl_ms;
    s.dead_letter_queue = lease->topic;
    s.dead_letter_at_least_once = true;
    s.expires_ms = 2 * lease->ttl_ms + 60000;
    return s;
  }
  queue_spec s;
  s.name = std::string(topic);
  switch (mode) {
    case delivery_mode::at_least_once:
      s.durable = true;
      s.quorum = true;
      s.placement = placement;
      s.delivery_limit = delivery_limit;
      s.dead_letter_queue = dead_letter_topic(topic);
      break;
    case delivery_mode::at_most_once: break;
    case delivery_mode::reply: s.expires_ms = reply_queue_expiry_ms; break;
  }
  return s;
}

std::string partition_queue(std::string_view topic, std::uint32_t index) {
  return std::string(topic) + "~" + std::to_string(index);
}

queue_spec partition_spec(std::string_view topic, std::uint32_t index, delivery_mode mode,
                          const quorum_placement& placement) {
  auto s = spec_for(topic, mode, placement);
  s.name = partition_queue(topic, index);
  s.single_active_consumer = true;
  return s;
}

std::optional<queue_spec> dead_letter_spec_for(std::string_view topic, delivery_mode mode,
                                               const quorum_placement& placement) {
  if (mode != delivery_mode::at_least_once || is_dead_letter_queue(topic) || parse_delay_topic(topic) ||
      parse_lease_topic(topic))
    return std::nullopt;
  return dead_letter_queue(dead_letter_topic(topic), placement);
}

}  // namespace dde::mqs
