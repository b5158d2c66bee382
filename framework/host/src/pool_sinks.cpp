#include "pool_sinks.hpp"

namespace dde::host {

void pool_sinks::detach(const std::string& topic) {
  sinks_.erase(topic);
  pause_handlers_.erase(topic);
}

std::shared_ptr<topic_sink> pool_sinks::find(const std::string& topic) const {
  auto it = sinks_.find(topic);
  return it == sinks_.end() ? nullptr : it->second.lock();
}

void pool_sinks::connected() const {
  for (auto& [topic, sink] : sinks_)
    if (auto s = sink.lock()) s->on_connected();
}

void pool_sinks::set_pause_handler(const std::string& topic, mqs_link::pause_handler fn) {
  if (fn)
    pause_handlers_[topic] = std::move(fn);
  else
    pause_handlers_.erase(topic);
}

bool pool_sinks::pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason,
                       const std::string& origin) const {
  auto it = pause_handlers_.find(topic);
  if (it == pause_handlers_.end()) return false;
  it->second(ms, reason, origin);
  return true;
}

void pool_sinks::answer_depth(const std::string& topic, std::uint64_t messages, std::uint64_t consumers,
                              const std::string& error) {
  auto it = depths_.find(topic);
  if (it == depths_.end() || it->second.empty()) return;
  auto fn = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) depths_.erase(it);
  fn(messages, consumers, error);
}

void pool_sinks::fail_depths(const std::string& error) {
  auto waiting = std::move(depths_);
  depths_.clear();
  for (auto& [topic, fns] : waiting)
    for (auto& fn : fns) fn(0, 0, error);
}

}  // namespace dde::host
