#include "dde/core/stall_watch.hpp"

#include <algorithm>

namespace dde {

std::vector<std::string> stall_watch::sweep(clock::time_point now, const std::vector<consumed>& topics) {
  std::vector<std::string> ask;
  if (limit_ == clock::duration::zero()) return ask;
  const auto sweep = ++sweeps_;
  for (auto& c : topics) {
    auto it = suspects_.find(c.topic);
    bool known = it != suspects_.end();
    // Its channel moved: all is well, though a stall stays reported for one limit (a health check
    // polling now and then sees it) while its topic is consumed afresh.
    if (known && c.last_traffic > it->second.traffic_when_asked) {
      if (it->second.stalled_since && now - it->second.detected < limit_) {
        it->second.swept = sweep;
        continue;
      }
      known = false;
    }
    if (!known && (!c.waiting || now - c.last_traffic < limit_)) continue;  // forgotten below
    if (!known) {
      if (it == suspects_.end()) it = suspects_.emplace(std::string(c.topic), suspect{}).first;
      it->second = suspect{};
    }
    auto& s = it->second;
    if (!s.asked && c.waiting && now >= s.next_ask && now - c.last_traffic >= limit_) {
      s.asked = true;
      s.traffic_when_asked = c.last_traffic;
      ask.emplace_back(c.topic);
    }
    s.swept = sweep;
  }
  std::erase_if(suspects_, [&](const auto& entry) { return entry.second.swept != sweep; });
  std::lock_guard lock(mutex_);
  for (auto it = stalled_.begin(); it != stalled_.end();) {
    auto s = suspects_.find(it->first);
    if (s == suspects_.end() || !s->second.stalled_since)
      it = stalled_.erase(it);
    else
      ++it;
  }
  return ask;
}

bool stall_watch::answer(const std::string& topic, std::uint64_t ready, clock::time_point last_traffic,
                         clock::time_point now) {
  auto it = suspects_.find(topic);
  if (it == suspects_.end() || !it->second.asked) return false;
  auto& s = it->second;
  s.asked = false;
  s.next_ask = now + limit_;                  // whatever the answer, not again before one more limit
  if (last_traffic > s.traffic_when_asked) {  // it moved
    s.empty_answers = 0;
    return false;
  }
  if (ready == 0) {  // idle: asked again later and later
    s.next_ask = now + limit_ * (1u << std::min<std::uint32_t>(s.empty_answers, 3));  // 1, 2, 4, 8 limits
    ++s.empty_answers;
    return false;
  }
  s.detected = now;
  if (!s.stalled_since) {
    s.stalled_since = s.traffic_when_asked;
    std::lock_guard lock(mutex_);
    stalled_[topic] = s.traffic_when_asked;
  }
  return true;
}

std::string stall_watch::report(clock::time_point now) const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (auto& [topic, since] : stalled_)
    out += (out.empty() ? "" : ", ") + topic + " for " +
           std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count()) + " ms";
  return out;
}

}  // namespace dde
