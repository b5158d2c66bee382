#pragma once
/// \file
/// The ids of the resent copies the dequeuer delivered lately (mqs/PROTOCOL.md "Resent copies").
/// A copy the MQS published again is marked; the first copy, which the broker may have stored all
/// the same, is not, and it can arrive after the marked one (a frozen node takes the publishes it
/// held in its socket once it resumes). Remembering the marked copies' ids flags that late first
/// copy too. Bounded by age and by count: marked copies only come after faults.

#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <unordered_set>
#include <utility>

namespace dde::mqs {

class resent_ids {
 public:
  using clock = std::chrono::steady_clock;
  explicit resent_ids(clock::duration keep = std::chrono::minutes(10), std::size_t most = 100000)
      : keep_(keep), most_(most) {}

  /// A marked copy of `id` was delivered at `now`.
  void remember(const std::string& id, clock::time_point now) {
    forget_before(now - keep_);
    if (!ids_.insert(id).second) return;
    order_.emplace_back(now, id);
    if (order_.size() > most_) {
      ids_.erase(order_.front().second);
      order_.pop_front();
    }
  }
  /// Whether a marked copy of `id` was delivered within the kept time.
  bool seen(const std::string& id, clock::time_point now) {
    if (ids_.empty()) return false;  // the usual case: one test of an empty set per delivery
    forget_before(now - keep_);
    return ids_.count(id) > 0;
  }
  std::size_t size() const { return ids_.size(); }

 private:
  void forget_before(clock::time_point t) {
    while (!order_.empty() && order_.front().first < t) {
      ids_.erase(order_.front().second);
      order_.pop_front();
    }
  }
  clock::duration keep_;
  std::size_t most_;
  std::unordered_set<std::string> ids_;
  std::deque<std::pair<clock::time_point, std::string>> order_;
};

}  // namespace dde::mqs
