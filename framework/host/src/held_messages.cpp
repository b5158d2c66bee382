#include "held_messages.hpp"

namespace dde::host {

bool held_messages::wait_for_sub_pool(const std::string& key, held_message& w) {
  if (subs_.has_room(key)) return false;
  by_key_[key].push_back(std::move(w));
  ++sub_held_;
  return true;
}

void held_messages::sub_pool_finished(const std::string& key) {
  subs_.finish(key);
  auto held = by_key_.find(key);
  if (held == by_key_.end() || held->second.empty()) return;
  auto w = std::move(held->second.front());
  held->second.pop_front();
  if (held->second.empty()) by_key_.erase(held);
  --sub_held_;
  queue_.push_front(std::move(w));
}

nlohmann::json held_messages::describe(const std::vector<std::string>& in_flight_keys) const {
  nlohmann::json subs = nlohmann::json::object();
  auto entry = [&](const std::string& key) {
    if (subs.contains(key)) return;
    auto held = by_key_.find(key);
    subs[key] = {{"inFlight", subs_.in_flight(key)},
                 {"held", held == by_key_.end() ? 0 : held->second.size()},
                 {"capacity", subs_.capacity(key)}};
  };
  for (auto& [key, cap] : subs_.spec().capacity) entry(key);
  for (auto& [key, held] : by_key_) entry(key);
  for (auto& key : in_flight_keys) entry(key);
  return subs;
}

}  // namespace dde::host
