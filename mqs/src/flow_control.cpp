#include "dde/mqs/flow_control.hpp"

#include "dde/log.hpp"

namespace dde::mqs {

void flow_control::add(std::size_t messages, std::size_t bytes) {
  messages_ += messages;
  bytes_ += bytes;
}

void flow_control::remove(std::size_t messages, std::size_t bytes) {
  messages_ -= messages;
  bytes_ -= bytes;
  if (!any_paused_.load() || !low()) return;
  std::unordered_map<std::uint64_t, std::shared_ptr<net::ws_connection>> resume;
  {
    std::lock_guard lock(mutex_);
    if (!low()) return;
    resume.swap(paused_);
    any_paused_ = false;
  }
  if (!resume.empty())
    dde::logger("mqs")->debug("enqueue backlog down to {} messages: reading {} paused connection(s) again",
                              messages_.load(), resume.size());
  for (auto& [id, conn] : resume) conn->pause_reading(false);
}

bool flow_control::full() const { return messages_.load() >= max_messages_ || bytes_.load() >= max_bytes_; }

void flow_control::pause_if_full(const std::shared_ptr<net::ws_connection>& conn) {
  if (!full()) return;
  std::lock_guard lock(mutex_);
  if (!full()) return;
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
  any_paused_ = true;
}

void flow_control::forget(std::uint64_t conn_id) {
  std::lock_guard lock(mutex_);
  paused_.erase(conn_id);
}

}  // namespace dde::mqs
