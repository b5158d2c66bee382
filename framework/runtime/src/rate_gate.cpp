#include "dde/runtime/rate_gate.hpp"

namespace dde::runtime {
namespace {
// Starts are recorded by workers a moment after the gate allowed them; a margin of 2% of the
// window keeps a late-recorded start from making two starts look closer than they were.
std::chrono::steady_clock::duration with_margin(std::chrono::milliseconds per) {
  return per + std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(1), per / 50);
}
}  // namespace

rate_gate::rate_gate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight)
    : messages_(messages), per_(with_margin(per)), max_in_flight_(max_in_flight) {}

rate_gate::verdict rate_gate::try_start(clock::time_point now, const std::function<void()>& on_room) {
  std::lock_guard lock(mutex_);
  if (max_in_flight_ > 0 && in_flight_ >= max_in_flight_) {
    if (on_room) waiting_.push_back(on_room);
    return {false, std::nullopt};
  }
  if (now < paused_until_) return {false, paused_until_};
  if (messages_ > 0 && starts_.size() >= messages_ && now - starts_.front() < per_)
    return {false, starts_.front() + per_};
  if (messages_ > 0) {
    starts_.push_back(now);
    while (starts_.size() > messages_) starts_.pop_front();
  }
  ++in_flight_;
  return {true, std::nullopt};
}

void rate_gate::finished() {
  std::function<void()> wake;
  {
    std::lock_guard lock(mutex_);
    if (in_flight_ > 0) --in_flight_;
    if (!waiting_.empty()) {
      wake = std::move(waiting_.front());
      waiting_.erase(waiting_.begin());
    }
  }
  if (wake) wake();
}

bool rate_gate::pause_until(clock::time_point until) {
  std::lock_guard lock(mutex_);
  if (until <= paused_until_) return false;
  paused_until_ = until;
  return true;
}

rate_gate::clock::time_point rate_gate::paused_until() const {
  std::lock_guard lock(mutex_);
  return paused_until_;
}

void rate_gate::set(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight) {
  std::vector<std::function<void()>> wake;
  {
    std::lock_guard lock(mutex_);
    messages_ = messages;
    per_ = with_margin(per);
    max_in_flight_ = max_in_flight;
    while (starts_.size() > messages_) starts_.pop_front();
    wake.swap(waiting_);
  }
  for (auto& w : wake) w();
}

}  // namespace dde::runtime
