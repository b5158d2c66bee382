#include "pause_board.hpp"

namespace dde::mqs {
namespace {

std::chrono::milliseconds left(std::chrono::steady_clock::time_point until,
                               std::chrono::steady_clock::time_point now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
}

}  // namespace

void pause_board::listen(client_id client, const std::string& topic, clock::time_point now,
                         std::vector<pause_notice>& out) {
  if (!listeners_[topic].insert(client).second) return;  // pulls again: it heard the pauses already
  topics_of_[client].insert(topic);
  auto it = running_.find(topic);
  if (it == running_.end()) return;
  auto remaining = left(it->second.until, now);
  if (remaining.count() <= 0) {
    running_.erase(it);
    return;
  }
  out.push_back(pause_notice{client, topic, remaining, it->second.reason, it->second.origin});
}

void pause_board::stop_listening(client_id client, const std::string& topic) {
  if (auto it = listeners_.find(topic); it != listeners_.end()) {
    it->second.erase(client);
    if (it->second.empty()) listeners_.erase(it);
  }
  if (auto it = topics_of_.find(client); it != topics_of_.end()) {
    it->second.erase(topic);
    if (it->second.empty()) topics_of_.erase(it);
  }
}

void pause_board::forget(client_id client) {
  auto it = topics_of_.find(client);
  if (it == topics_of_.end()) return;
  for (auto& topic : it->second) {
    auto l = listeners_.find(topic);
    if (l == listeners_.end()) continue;
    l->second.erase(client);
    if (l->second.empty()) listeners_.erase(l);
  }
  topics_of_.erase(it);
}

bool pause_board::pause(const std::string& topic, std::chrono::milliseconds length, const std::string& reason,
                        const std::string& origin, clock::time_point now, std::vector<pause_notice>& out) {
  if (length.count() <= 0) return false;
  auto until = now + length;
  auto it = running_.find(topic);
  if (it != running_.end() && it->second.until >= until) return false;
  if (it != running_.end()) {
    it->second = running_pause{until, reason, origin};
  } else {
    if (running_.size() >= max_running_) drop_expired(now);
    if (running_.size() < max_running_) running_.emplace(topic, running_pause{until, reason, origin});
  }
  if (auto l = listeners_.find(topic); l != listeners_.end())
    for (auto client : l->second) out.push_back(pause_notice{client, topic, length, reason, origin});
  return true;
}

void pause_board::drop_expired(clock::time_point now) {
  std::erase_if(running_, [&](const auto& entry) { return entry.second.until <= now; });
}

std::size_t pause_board::listeners(const std::string& topic) const {
  auto it = listeners_.find(topic);
  return it == listeners_.end() ? 0 : it->second.size();
}

}  // namespace dde::mqs
