#include "ask_tracker.hpp"

namespace dde::host {
namespace {

double seconds_between(clock::time_point from, clock::time_point to) {
  return to > from ? std::chrono::duration<double>(to - from).count() : 0.0;
}

}  // namespace

void ask_tracker::sent(const std::string& id, const std::string& pool, time_point at) {
  if (pending_.count(id)) return;
  auto it = order_.emplace(at, id);
  pending_.emplace(id, entry{pool, it});
}

std::optional<ask_tracker::ended> ask_tracker::answered(const std::string& id, time_point at) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  ended out{std::move(it->second.pool), seconds_between(it->second.at->first, at)};
  order_.erase(it->second.at);
  pending_.erase(it);
  return out;
}

std::vector<ask_tracker::ended> ask_tracker::expire(time_point now) {
  std::vector<ended> out;
  while (!order_.empty() && (order_.begin()->first + timeout_ <= now || order_.size() > max_pending_)) {
    auto oldest = order_.begin();
    auto it = pending_.find(oldest->second);
    out.push_back({std::move(it->second.pool), seconds_between(oldest->first, now)});
    pending_.erase(it);
    order_.erase(oldest);
  }
  return out;
}

std::optional<ask_tracker::time_point> ask_tracker::next_deadline() const {
  if (order_.empty()) return std::nullopt;
  return order_.begin()->first + timeout_;
}

}  // namespace dde::host
