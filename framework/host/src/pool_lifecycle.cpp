#include "pool_lifecycle.hpp"

namespace dde::host {

pool_lifecycle::pool_lifecycle(host::clock& clock, const strand_type& strand, std::string pool)
    : clock_(clock), strand_(strand), pool_(std::move(pool)) {}

bool pool_lifecycle::halt(std::string state, std::string reason) {
  if (stopping_) return false;
  halted_ = true;
  stopping_ = true;
  state_ = std::move(state);
  reason_ = std::move(reason);
  return true;
}

void pool_lifecycle::revive() {
  halted_ = false;
  stopping_ = false;
  state_ = "running";
  reason_.clear();
}

bool pool_lifecycle::begin_restart() {
  if (restarting_) return false;
  restarting_ = true;
  return true;
}

void pool_lifecycle::shut_down(std::chrono::milliseconds timeout, std::function<void(bool)> drained) {
  stopping_ = true;
  drained_ = std::move(drained);
  if (!timer_) timer_ = clock_.make_timer(strand_);
  timer_->after(timeout, [this] {
    if (drained_) this->drained(true);
  });
}

void pool_lifecycle::drained_if(std::size_t in_flight) {
  if (!stopping_ || !drained_ || in_flight > 0) return;
  timer_->cancel();
  drained(false);
}

void pool_lifecycle::drained(bool timed_out) {
  auto fn = std::move(drained_);
  drained_ = nullptr;
  fn(timed_out);
}

std::string pool_lifecycle::stopped_text(const std::string& restart_hint) const {
  if (!halted_) return "pool " + pool_ + " is shutting down";
  return "pool " + pool_ + " is " + reason_ + "; RESTART starts it again (" + restart_hint + ")";
}

}  // namespace dde::host
