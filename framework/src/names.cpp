#include "dde/names.hpp"

#include <uuid/uuid.h>

namespace dde {

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 100) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
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
  int parts = 0;
  while (true) {
    auto dot = topic.find('.');
    if (!valid_name(topic.substr(0, dot))) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    topic.remove_prefix(dot + 1);
  }
  return parts >= 2 && parts <= 4;
}

std::string reply_topic(std::string_view instance_id) { return "dde.reply." + std::string(instance_id); }

std::string dead_letter_topic(std::string_view topic) { return "dde.dead." + std::string(topic); }

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

std::string new_uuid() {
  uuid_t raw;
  uuid_generate_random(raw);
  char text[37];
  uuid_unparse_lower(raw, text);
  return text;
}

}  // namespace dde
