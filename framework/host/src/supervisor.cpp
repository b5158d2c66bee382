#include "supervisor.hpp"

#include <algorithm>

namespace dde::host {

supervisor::decision supervisor::on_failure(time_point now) {
  switch (spec_.kind) {
    case strategy::resume: return {action::resume};
    case strategy::stop: return {action::stop_worker};
    case strategy::restart:
    case strategy::escalate: break;
  }
  while (!restarts_.empty() && now - restarts_.front() > spec_.within) restarts_.pop_front();
  if (int(restarts_.size()) >= spec_.max_restarts) return {action::stop_pool};
  restarts_.push_back(now);
  // Back off more the more often it failed lately: backoff, 2x, 4x ... at most 30 s.
  auto factor = std::min<std::size_t>(restarts_.size() - 1, 10);
  auto backoff = std::min(spec_.backoff * (1 << factor), std::chrono::milliseconds(30000));
  return {spec_.kind == strategy::restart ? action::restart_worker : action::restart_pool, backoff};
}

std::string supervisor::stop_reason() const {
  return "stopped: " + std::to_string(spec_.max_restarts) + " restarts within " +
         std::to_string(spec_.within.count()) + " ms";
}

std::string supervisor::stopped_state(const std::string& last_failure) const {
  return stop_reason() + "; last failure: " + last_failure;
}

void poison_filter::failed(const std::string& id, const std::string& what) {
  if (!enabled() || id.empty()) return;
  auto [it, fresh] = by_id_.try_emplace(id);
  ++it->second.failures;
  it->second.last_failure = what;
  if (!fresh) return;
  order_.push_back(id);
  while (by_id_.size() > capacity_ && !order_.empty()) {
    by_id_.erase(order_.front());
    order_.pop_front();
  }
  // Ids of messages done since linger in order_: drop them once they outnumber the remembered ones.
  if (order_.size() > 2 * capacity_ + 16) {
    std::deque<std::string> kept;
    for (auto& o : order_)
      if (by_id_.count(o)) kept.push_back(std::move(o));
    order_ = std::move(kept);
  }
}

std::optional<poison_filter::verdict> poison_filter::poisoned(const std::string& id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end() || it->second.failures < limit_) return std::nullopt;
  verdict v{it->second.failures, std::move(it->second.last_failure)};
  by_id_.erase(it);
  return v;
}

}  // namespace dde::host
