// dde::throttle_queue with a fake clock and scheduler: order, the bound in every sliding window,
// rate changes, no target, and no timer while idle.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include "dde/throttler.hpp"

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

/// A deterministic clock and timer queue: time moves only when the test says so, and timers fire
/// in due order with the clock set to their due time.
class fake_time {
 public:
  clock_type::time_point now() const { return now_; }
  void schedule(std::chrono::milliseconds delay, std::function<void()> fn) {
    timers_.emplace(now_ + delay, std::move(fn));
  }
  /// Moves time forward by `d`, firing every timer due on the way.
  void advance(clock_type::duration d) {
    auto end = now_ + d;
    while (!timers_.empty() && timers_.begin()->first <= end) {
      auto it = timers_.begin();
      now_ = std::max(now_, it->first);
      auto fn = std::move(it->second);
      timers_.erase(it);
      fn();
    }
    now_ = end;
  }
  std::size_t pending() const { return timers_.size(); }

 private:
  clock_type::time_point now_{std::chrono::hours(1)};
  std::multimap<clock_type::time_point, std::function<void()>> timers_;
};

struct delivery {
  int item;
  clock_type::time_point at;
};

class Throttle : public ::testing::Test {
 protected:
  dde::throttle_queue<int> make(std::size_t n, std::chrono::milliseconds per) {
    return dde::throttle_queue<int>(
        {n, per}, [this] { return time.now(); },
        [this](std::chrono::milliseconds d, std::function<void()> fn) { time.schedule(d, std::move(fn)); });
  }
  dde::throttle_queue<int>::target_fn recorder() {
    return [this](int item) { got.push_back({item, time.now()}); };
  }
  /// The most deliveries found in any window [t, t + per), sliding over every delivery time.
  std::size_t densest(clock_type::duration per, std::size_t from = 0) const {
    std::size_t best = 0;
    for (std::size_t i = from, j = from; i < got.size(); ++i) {
      while (j < got.size() && got[j].at - got[i].at < per) ++j;
      best = std::max(best, j - i);
    }
    return best;
  }

  fake_time time;
  std::vector<delivery> got;
};

TEST_F(Throttle, DeliversInOrderAtMostNPerWindow) {
  auto q = make(3, 1000ms);
  q.set_target(recorder());
  for (int i = 0; i < 10; ++i) q.push(i);
  EXPECT_EQ(got.size(), 3u) << "the first window's three go at once";
  time.advance(10s);
  ASSERT_EQ(got.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[std::size_t(i)].item, i);
  EXPECT_EQ(densest(1000ms), 3u);
  // And no faster than that: 10 items at 3/s end in the fourth second.
  EXPECT_EQ(got.back().at - got.front().at, 3000ms);
}

TEST_F(Throttle, EveryWindowHoldsAtMostNOverIrregularBursts) {
  auto q = make(5, 200ms);
  q.set_target(recorder());
  // Bursts at uneven moments, some inside a window others straddling one: a per-tick throttler
  // would let 2N through around a tick boundary.
  int next = 0;
  for (int round = 0; round < 40; ++round) {
    int burst = 1 + (round * 7) % 9;
    for (int i = 0; i < burst; ++i) q.push(next++);
    time.advance(std::chrono::milliseconds(13 + (round * 37) % 150));
  }
  time.advance(60s);
  ASSERT_EQ(got.size(), std::size_t(next));
  EXPECT_EQ(densest(200ms), 5u);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].item, int(i));
}

TEST_F(Throttle, ARateChangeAppliesToWhatIsQueued) {
  auto q = make(2, 1000ms);
  q.set_target(recorder());
  for (int i = 0; i < 40; ++i) q.push(i);
  time.advance(2500ms);
  std::size_t before = got.size();
  EXPECT_EQ(before, 6u);  // at 0 s, 1 s and 2 s
  q.set_rate({10, 1000ms});
  EXPECT_EQ(q.rate().messages, 10u);
  time.advance(1s);
  // The change counts the deliveries already made: the window ending now holds at most ten.
  EXPECT_LE(densest(1000ms), 10u);
  EXPECT_GE(got.size() - before, 8u) << "the higher rate took effect at once, not a second later";
  time.advance(10s);
  EXPECT_EQ(got.size(), 40u);
  EXPECT_LE(densest(1000ms), 10u);

  // Slower again: every window after the change holds at most one.
  got.clear();
  q.set_rate({1, 500ms});
  for (int i = 0; i < 5; ++i) q.push(i);
  time.advance(10s);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(densest(500ms), 1u);
}

TEST_F(Throttle, LengtheningTheWindowCountsDeliveriesAlreadyMade) {
  auto q = make(4, 100ms);
  q.set_target(recorder());
  for (int i = 0; i < 8; ++i) q.push(i);
  time.advance(150ms);  // four at 0 ms, four at 100 ms
  ASSERT_EQ(got.size(), 8u);
  q.set_rate({4, 1000ms});
  for (int i = 8; i < 12; ++i) q.push(i);
  EXPECT_EQ(got.size(), 8u) << "the last four deliveries are 50 ms old: the new 1 s window is full";
  time.advance(5s);
  EXPECT_EQ(got.size(), 12u);
  EXPECT_LE(densest(1000ms, 4), 4u);
}

TEST_F(Throttle, WithoutATargetItemsQueueAndNoTimerRuns) {
  auto q = make(2, 100ms);
  for (int i = 0; i < 5; ++i) q.push(i);
  time.advance(1s);
  EXPECT_EQ(q.queued(), 5u);
  EXPECT_EQ(q.timers_scheduled(), 0u);
  q.set_target(recorder());
  EXPECT_EQ(got.size(), 2u);
  time.advance(1s);
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(got.front().item, 0);

  // Taking the target away mid-stream holds what is left, in order, for the next target.
  q.set_target({});
  for (int i = 5; i < 9; ++i) q.push(i);
  time.advance(1s);
  EXPECT_EQ(got.size(), 5u);
  std::vector<int> other;
  q.set_target([&](int item) { other.push_back(item); });
  time.advance(1s);
  EXPECT_EQ(other, (std::vector<int>{5, 6, 7, 8}));
}

TEST_F(Throttle, AnIdleThrottleSchedulesNoTimer) {
  auto q = make(2, 100ms);
  q.set_target(recorder());
  q.push(1);
  q.push(2);
  EXPECT_EQ(q.timers_scheduled(), 0u) << "within the rate, nothing waits";
  q.push(3);
  EXPECT_EQ(q.timers_scheduled(), 1u);
  EXPECT_TRUE(q.timer_pending());
  time.advance(1s);
  EXPECT_EQ(got.size(), 3u);
  EXPECT_FALSE(q.timer_pending());
  EXPECT_EQ(time.pending(), 0u);
  time.advance(1h);
  EXPECT_EQ(q.timers_scheduled(), 1u) << "an empty queue schedules nothing";
  EXPECT_EQ(time.pending(), 0u);
}

TEST_F(Throttle, OneTimerAtATimeWhileItemsWait) {
  auto q = make(1, 100ms);
  q.set_target(recorder());
  for (int i = 0; i < 50; ++i) q.push(i);
  EXPECT_EQ(time.pending(), 1u);
  time.advance(10s);
  EXPECT_EQ(got.size(), 50u);
  EXPECT_EQ(q.timers_scheduled(), 49u) << "one per delivery that had to wait";
}

TEST_F(Throttle, ATargetThatPushesAgainKeepsOrderAndRate) {
  auto q = make(2, 100ms);
  q.set_target([&](int item) {
    got.push_back({item, time.now()});
    if (item < 10) q.push(item + 100);  // re-entrant push from the target
  });
  q.push(0);
  q.push(1);
  time.advance(10s);
  ASSERT_EQ(got.size(), 4u);
  // 100 is pushed during the delivery of 0, before 1 is: 0 and 100 fill the first window.
  EXPECT_EQ(got[1].item, 100);
  EXPECT_EQ(got[2].item, 1);
  EXPECT_EQ(got[3].item, 101);
  EXPECT_LE(densest(100ms), 2u);
}

TEST_F(Throttle, ARateThatAllowsNothingIsRefused) {
  EXPECT_THROW(make(0, 100ms), std::invalid_argument);
  EXPECT_THROW(make(1, 0ms), std::invalid_argument);
  auto q = make(1, 100ms);
  EXPECT_THROW(q.set_rate({1, -5ms}), std::invalid_argument);
  EXPECT_EQ(q.rate().per, 100ms) << "a refused change leaves the rate as it was";
}

TEST_F(Throttle, TimersOfADestroyedThrottleDoNothing) {
  {
    auto q = make(1, 100ms);
    q.set_target(recorder());
    q.push(1);
    q.push(2);
  }
  time.advance(1s);  // the pending timer fires after the queue is gone
  EXPECT_EQ(got.size(), 1u);
}

}  // namespace
