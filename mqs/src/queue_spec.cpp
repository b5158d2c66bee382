#include "dde/mqs/queue_spec.hpp"

namespace dde::mqs {
namespace {

bool is_dead_letter_queue(std::string_view topic) { return topic.rfind("dde.dead.", 0) == 0; }

queue_spec dead_letter_queue(std::string name) {
  queue_spec s;
  s.name = std::move(name);
  s.durable = true;
  s.quorum = true;
  return s;
}

}  // namespace

queue_spec spec_for(std::string_view topic, delivery_mode mode) {
  if (is_dead_letter_queue(topic)) return dead_letter_queue(std::string(topic));
  if (auto delay = parse_delay_topic(topic)) {
    queue_spec s = dead_letter_queue(std::string(topic));
    s.message_ttl_ms = delay->delay_ms;
    s.dead_letter_queue = delay->topic;
    s.dead_letter_at_least_once = true;
    return s;
  }
  queue_spec s;
  s.name = std::string(topic);
  switch (mode) {
    case delivery_mode::at_least_once:
      s.durable = true;
      s.quorum = true;
      s.delivery_limit = delivery_limit;
      s.dead_letter_queue = dead_letter_topic(topic);
      break;
    case delivery_mode::at_most_once:
      break;
    case delivery_mode::reply:
      s.expires_ms = reply_queue_expiry_ms;
      break;
  }
  return s;
}

std::optional<queue_spec> dead_letter_spec_for(std::string_view topic, delivery_mode mode) {
  if (mode != delivery_mode::at_least_once || is_dead_letter_queue(topic) || parse_delay_topic(topic))
    return std::nullopt;
  return dead_letter_queue(dead_letter_topic(topic));
}

}  // namespace dde::mqs
