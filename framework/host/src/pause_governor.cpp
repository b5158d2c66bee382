#include "pause_governor.hpp"

namespace dde::host {

bool pause_governor::extend(time_point until, const std::string& reason, bool own) {
  if (until <= announced_until_ + std::chrono::milliseconds(5)) return false;
  announced_until_ = until;
  reason_ = reason;
  ++(own ? pauses_ : remote_pauses_);
  return true;
}

bool pause_governor::is_own(const std::string& origin, const std::string& instance) {
  auto own = "/" + instance;
  return origin.size() >= own.size() && origin.compare(origin.size() - own.size(), own.size(), own) == 0;
}

}  // namespace dde::host
