#include "host/supervisor.hpp"

#include <algorithm>

namespace dde::host {

supervisor::decision supervisor::on_failure(time_point now) {
  switch (spec_.kind) {
    case strategy::resume:
      return {action::resume};
    case strategy::stop:
      return {action::stop_worker};
    case strategy::restart:
    case strategy::escalate:
      break;
  }
  while (!restarts_.empty() && now - restarts_.front() > spec_.within) restarts_.pop_front();
  if (int(restarts_.size()) >= spec_.max_restarts) return {action::stop_pool};
  restarts_.push_back(now);
  // Back off more the more often it failed lately: backoff, 2x, 4x ... at most 30 s.
  auto factor = std::min<std::size_t>(restarts_.size() - 1, 10);
  auto backoff = std::min(spec_.backoff * (1 << factor), std::chrono::milliseconds(30000));
  return {spec_.kind == strategy::restart ? action::restart_worker : action::restart_pool, backoff};
}

std::string supervisor::stopped_state(const std::string& last_failure) const {
  return "stopped: " + std::to_string(spec_.max_restarts) + " restarts within " +
         std::to_string(spec_.within.count()) + " ms; last failure: " + last_failure;
}

}  // namespace dde::host
