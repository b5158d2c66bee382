#include <gtest/gtest.h>

#include "dde/runtime/rate_gate.hpp"

namespace {

using dde::runtime::rate_gate;
using namespace std::chrono_literals;

TEST(RateGate, AllowsNStartsThenRefusesUntilTheOldestLeavesTheWindow) {
  rate_gate gate(3, 1000ms, 0);
  auto t0 = rate_gate::clock::time_point{} + 10s;
  EXPECT_TRUE(gate.try_start(t0).allowed);
  EXPECT_TRUE(gate.try_start(t0 + 100ms).allowed);
  EXPECT_TRUE(gate.try_start(t0 + 200ms).allowed);
  auto refused = gate.try_start(t0 + 300ms);
  EXPECT_FALSE(refused.allowed);
  ASSERT_TRUE(refused.retry_at);
  EXPECT_GE(*refused.retry_at, t0 + 1000ms);  // never before the oldest start leaves the window
  EXPECT_FALSE(gate.try_start(t0 + 999ms).allowed);
  EXPECT_TRUE(gate.try_start(*refused.retry_at).allowed);
  // The window slides: the next start waits for the second-oldest one.
  auto next = gate.try_start(*refused.retry_at);
  ASSERT_FALSE(next.allowed);
  EXPECT_GE(*next.retry_at, t0 + 1100ms);
}

TEST(RateGate, NoWindowEverHoldsMoreThanNStartsWhateverTheRequestPattern) {
  rate_gate gate(5, 200ms, 0);
  std::vector<rate_gate::clock::time_point> taken;
  auto t = rate_gate::clock::time_point{} + 1s;
  for (int i = 0; i < 2000; ++i) {
    t += std::chrono::milliseconds((i * 7919) % 23);  // bursts and gaps
    if (gate.try_start(t).allowed) taken.push_back(t);
  }
  ASSERT_GT(taken.size(), 100u);
  for (std::size_t i = 0, j = 0; i < taken.size(); ++i) {
    while (j < taken.size() && taken[j] - taken[i] < 200ms) ++j;
    ASSERT_LE(j - i, 5u) << "window starting at start " << i;
  }
}

TEST(RateGate, MaxInFlightWakesOneWaiterPerFinishedMessage) {
  rate_gate gate(0, 1000ms, 2);
  auto now = rate_gate::clock::now();
  EXPECT_TRUE(gate.try_start(now).allowed);
  EXPECT_TRUE(gate.try_start(now).allowed);
  int woken = 0;
  auto refused = gate.try_start(now, [&] { ++woken; });
  EXPECT_FALSE(refused.allowed);
  EXPECT_FALSE(refused.retry_at);  // no timer: a finishing message wakes it
  gate.try_start(now, [&] { ++woken; });
  gate.finished();
  EXPECT_EQ(woken, 1);
  EXPECT_TRUE(gate.try_start(now).allowed);
  EXPECT_FALSE(gate.try_start(now).allowed);
}

TEST(RateGate, ARateChangeTakesEffectAndWakesWaiters) {
  rate_gate gate(1, 1000ms, 1);
  auto now = rate_gate::clock::now();
  EXPECT_TRUE(gate.try_start(now).allowed);
  int woken = 0;
  EXPECT_FALSE(gate.try_start(now, [&] { ++woken; }).allowed);
  gate.set(10, 1000ms, 5);
  EXPECT_EQ(woken, 1);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(gate.try_start(now).allowed);
}

}  // namespace

namespace {

TEST(RateGate, APauseHoldsEveryStartUntilItEndsAndOnlyALongerOneExtendsIt) {
  rate_gate gate(0, 1000ms, 0);  // no rate: only the governance pause
  auto t0 = rate_gate::clock::time_point{} + 10s;
  EXPECT_TRUE(gate.try_start(t0).allowed);
  EXPECT_TRUE(gate.pause_until(t0 + 500ms));
  EXPECT_FALSE(gate.pause_until(t0 + 300ms)) << "a shorter pause changes nothing";
  auto held = gate.try_start(t0 + 100ms);
  EXPECT_FALSE(held.allowed);
  ASSERT_TRUE(held.retry_at);
  EXPECT_EQ(*held.retry_at, t0 + 500ms);
  EXPECT_TRUE(gate.pause_until(t0 + 800ms));
  EXPECT_FALSE(gate.try_start(t0 + 600ms).allowed);
  EXPECT_EQ(gate.paused_until(), t0 + 800ms);
  EXPECT_TRUE(gate.try_start(t0 + 800ms).allowed);
}

}  // namespace
