#include "reply_race.hpp"

namespace dde::host {

void reply_race::open(const std::string& message_id) {
  std::lock_guard lock(mutex_);
  open_.emplace(message_id, 0);
}

void reply_race::close(const std::string& message_id) {
  std::lock_guard lock(mutex_);
  open_.erase(message_id);
}

bool reply_race::claim(const std::string& message_id) {
  std::lock_guard lock(mutex_);
  auto it = open_.find(message_id);
  if (it == open_.end()) return true;
  if (it->second == 0) {
    it->second = 1;
    ++counts_.answered;
    return true;
  }
  ++counts_.dropped;
  return false;
}

bool reply_race::answered(const std::string& message_id) const {
  std::lock_guard lock(mutex_);
  auto it = open_.find(message_id);
  return it != open_.end() && it->second == 1;
}

void reply_race::count_copies(std::uint64_t n, bool chopped) {
  std::lock_guard lock(mutex_);
  counts_.copies += n;
  if (chopped) counts_.chopped += n;
}

reply_race::counts reply_race::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace dde::host
