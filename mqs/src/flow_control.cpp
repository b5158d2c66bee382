#include "flow_control.hpp"

#include "dde/log.hpp"

namespace dde::mqs {

void flow_control::add(std::size_t messages, std::size_t bytes) {
  const auto held = messages_ += messages;
  bytes_ += bytes;
  if (drained_ && held >= burst_messages_ && !burst_.load(std::memory_order_relaxed)) burst_ = true;
}

void flow_control::remove(std::size_t messages, std::size_t bytes) {
  const auto left = messages_ -= messages;
  bytes_ -= bytes;
  if (left == 0 && burst_.load(std::memory_order_relaxed) && burst_.exchange(false)) drained_();
  // pause_if_full sets any_paused_ before it looks at the backlog, and this looks at any_paused_
  // after lowering the backlog (both sequentially consistent): either it sees the pause coming and
  // waits for it on the mutex, or pause_if_full sees the lower backlog and does not pause.
  if (!any_paused_.load() || !low()) return;
  std::lock_guard lock(mutex_);
  if (!low()) return;
  if (!paused_.empty())
    dde::logger("mqs")->debug("enqueue backlog down to {} messages: reading {} paused connection(s) again",
                              messages_.load(), paused_.size());
  // Resumed under the lock, so a pause of the same connection that follows is posted after it.
  for (auto& [id, conn] : paused_) conn->pause_reading(false);
  paused_.clear();
  any_paused_ = false;  // also when what was paused closed meanwhile (forget)
}

bool flow_control::full() const { return messages_.load() >= max_messages_ || bytes_.load() >= max_bytes_; }

void flow_control::pause_if_full(const std::shared_ptr<net::ws_connection>& conn) {
  if (!full()) return;
  std::lock_guard lock(mutex_);
  // Announced before the backlog is looked at again: an enqueuer thread draining it meanwhile then
  // comes for the mutex and resumes what this pauses (remove()). Set after the look, the enqueuer
  // could drain the whole backlog in between, see nothing paused, and the connection would never
  // be read again (seen under load: a producer host stuck for good after 12,544 messages).
  any_paused_ = true;
  if (!full()) {
    any_paused_ = !paused_.empty();
    return;
  }
  if (paused_.emplace(conn->id(), conn).second) {
    conn->pause_reading(true);
    // A warning now and then, not one per pause: under a steady overload reads flip often.
    auto now = std::chrono::steady_clock::now();
    bool warn = now - last_warning_ >= std::chrono::seconds(10);
    if (warn) last_warning_ = now;
    dde::logger("mqs")->log(warn ? spdlog::level::warn : spdlog::level::debug,
                            "enqueue backlog full ({} messages, {} bytes): pausing reads from {}",
                            messages_.load(), bytes_.load(), conn->remote());
  }
}

void flow_control::forget(std::uint64_t conn_id) {
  std::lock_guard lock(mutex_);
  paused_.erase(conn_id);
}

}  // namespace dde::mqs
