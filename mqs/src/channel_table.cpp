#include "channel_table.hpp"

#include <algorithm>

namespace dde::mqs {

std::uint16_t channel_table::next_channel(std::uint16_t max) {
  if (max == 0) max = 65535;
  std::uint16_t ch = next_channel_;
  next_channel_ = next_channel_ >= max ? 1 : next_channel_ + 1;
  return ch;
}

channel_state* channel_table::find(std::uint64_t epoch) {
  if (!epoch) return nullptr;
  auto it = channels_.find(epoch);
  return it == channels_.end() ? nullptr : &it->second;
}

void channel_table::erase(std::uint64_t epoch) {
  channels_.erase(epoch);
  dirty_.erase(epoch);
}

channel_table::clock::time_point channel_table::flush(clock::time_point now, bool all) {
  auto acks_due = clock::time_point::max();
  for (auto e = dirty_.begin(); e != dirty_.end();) {
    auto it = channels_.find(*e);
    if (it == channels_.end()) {
      e = dirty_.erase(e);
      continue;
    }
    auto& acks = it->second.acks;
    if (all)
      acks.flush(*it->second.link);
    else
      acks.flush(*it->second.link, now);
    if (auto due = acks.due()) {
      acks_due = std::min(acks_due, *due);
      ++e;
    } else {
      e = dirty_.erase(e);
    }
  }
  return acks_due;
}

}  // namespace dde::mqs
