#include "worker_watch.hpp"

#include <string>

namespace dde::host {

worker_watch::worker_watch(host::clock& clock, const strand_type& strand,
                           std::chrono::milliseconds ping_after, std::chrono::milliseconds pong_timeout,
                           watched_pool& pool)
    : clock_(clock), strand_(strand), pool_(pool), guard_(ping_after, pong_timeout) {}

void worker_watch::start() {
  if (!enabled()) return;
  running_ = true;
  asleep_ = false;
  arm();
}

void worker_watch::stop() {
  running_ = false;
  if (timer_) timer_->cancel();
}

void worker_watch::arm() {
  if (!running_) return;
  if (!timer_) timer_ = clock_.make_timer(strand_);
  // The timer is this object's: its call never outlives it.
  timer_->after(guard_.period(), [this] { scan(); });
}

void worker_watch::scan() {
  if (!running_) return;
  auto holding = [&](std::size_t i) { return i < pool_.slot_count() && pool_.holding(i); };
  for (auto& todo : guard_.scan(clock_.now(), holding)) {
    if (todo.what == starvation_guard::action::kind::replace) {
      pool_.replace_stuck(todo.slot);
      continue;
    }
    pool_.ping(todo.slot,
               [this, slot = todo.slot, ping = todo.ping_id](bool busy, std::chrono::milliseconds busy_for) {
                 on_pong(slot, ping, busy, busy_for);
               });
  }
  bool holding_any = false;
  for (std::size_t i = 0; i < pool_.slot_count() && !holding_any; ++i) holding_any = holding(i);
  if (!holding_any && !guard_.pinging()) {
    asleep_ = true;
    return;
  }
  arm();
}

void worker_watch::on_pong(std::size_t slot, std::uint64_t ping, bool busy,
                           std::chrono::milliseconds busy_for) {
  switch (guard_.on_pong(slot, ping, busy, busy_for, clock_.now())) {
    case starvation_guard::verdict::stale: return;
    case starvation_guard::verdict::too_slow:
      pool_.fail_current(slot, "did not call done() within " + std::to_string(guard_.ping_after().count()) +
                                   " ms (starvation guard)");
      return;
    case starvation_guard::verdict::answered: pool_.answered(); return;
  }
}

}  // namespace dde::host
