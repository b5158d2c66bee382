#include "credit_watch.hpp"

namespace dde::host {

void credit_watch::linked(clock::time_point now) {
  for (auto& [topic, s] : topics_) {
    s.credit = 0;
    s.last_traffic = now;  // a fresh link gets its own limit before it is suspect
  }
  asked_.clear();
}

void credit_watch::pulled(const std::string& topic, std::uint64_t credit, clock::time_point now) {
  if (!enabled()) return;
  auto [it, fresh] = topics_.try_emplace(topic);
  // Credit given after a quiet spell starts the clock: an idle pool is not overdue the moment it
  // pulls again.
  if (fresh || it->second.credit == 0) it->second.last_traffic = now;
  it->second.credit += credit;
}

void credit_watch::delivered(const std::string& topic, clock::time_point now) {
  if (!enabled()) return;
  auto it = topics_.find(topic);
  if (it == topics_.end()) return;
  if (it->second.credit > 0) --it->second.credit;
  it->second.last_traffic = now;
}

void credit_watch::cancelled(const std::string& topic) {
  topics_.erase(topic);
  asked_.erase(topic);
}

std::uint64_t credit_watch::credit(const std::string& topic) const {
  auto it = topics_.find(topic);
  return it == topics_.end() ? 0 : it->second.credit;
}

credit_watch::sweep_result credit_watch::sweep(clock::time_point now) {
  sweep_result out;
  if (!enabled()) return out;
  for (auto it = asked_.begin(); it != asked_.end();) {
    if (now - it->second < watch_.limit()) {
      ++it;
      continue;
    }
    auto topic = it->first;
    it = asked_.erase(it);
    if (record(topic, 1, now)) out.stalled.push_back(topic);
  }
  std::vector<stall_watch::consumed> pools;
  pools.reserve(topics_.size());
  for (auto& [topic, s] : topics_) pools.push_back({topic, s.last_traffic, s.credit > 0});
  out.ask = watch_.sweep(now, pools);
  for (auto& topic : out.ask) asked_[topic] = now;
  return out;
}

bool credit_watch::answer(const std::string& topic, std::uint64_t ready, bool error, clock::time_point now) {
  if (asked_.erase(topic) == 0) return false;  // not asked by the watch, or already given up on
  return record(topic, error ? 0 : ready, now);
}

bool credit_watch::record(const std::string& topic, std::uint64_t ready, clock::time_point now) {
  auto it = topics_.find(topic);
  auto last = it == topics_.end() ? now : it->second.last_traffic;
  if (!watch_.answer(topic, ready, last, now)) return false;
  ++stalls_[topic];
  return true;
}

}  // namespace dde::host
