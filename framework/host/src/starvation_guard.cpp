#include "starvation_guard.hpp"

#include <algorithm>

namespace dde::host {

std::chrono::milliseconds starvation_guard::period() const {
  return std::min(std::max(ping_after_ / 2, std::chrono::milliseconds(20)), pong_timeout_);
}

void starvation_guard::resize(std::size_t n, time_point now) {
  last_activity_.resize(n, now);
  ping_out_.resize(n, 0);
}

void starvation_guard::active(std::size_t slot, time_point now) {
  if (slot >= last_activity_.size()) resize(slot + 1, now);
  last_activity_[slot] = now;
}

void starvation_guard::forget(std::size_t slot) {
  if (slot < ping_out_.size()) ping_out_[slot] = 0;
}

std::vector<starvation_guard::action> starvation_guard::scan(
    time_point now, const std::function<bool(std::size_t)>& holding) {
  std::vector<action> todo;
  for (std::size_t i = 0; i < last_activity_.size(); ++i) {
    if (!holding(i)) continue;
    if (ping_out_[i] != 0) {
      // PING unanswered: the worker's thread is stuck inside the plugin.
      if (now - last_activity_[i] > ping_after_ + pong_timeout_) {
        ping_out_[i] = 0;
        todo.push_back({action::kind::replace, i});
      }
      continue;
    }
    if (now - last_activity_[i] < ping_after_) continue;
    ping_out_[i] = next_ping_++;
    todo.push_back({action::kind::ping, i, ping_out_[i]});
  }
  return todo;
}

starvation_guard::verdict starvation_guard::on_pong(std::size_t slot, std::uint64_t ping, bool busy,
                                                    std::chrono::milliseconds busy_for, time_point now) {
  if (slot >= ping_out_.size() || ping_out_[slot] != ping) return verdict::stale;
  ping_out_[slot] = 0;
  last_activity_[slot] = now;
  return busy && busy_for >= ping_after_ ? verdict::too_slow : verdict::answered;
}

}  // namespace dde::host
