// The isolate system's delivery watchdog over its MQS link (credit_watch.hpp): which pools it
// asks the MQS about, which answers make a stall, and a question left unanswered.
#include <gtest/gtest.h>

#include "credit_watch.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;
using clock = credit_watch::clock;

class CreditWatch : public ::testing::Test {
 protected:
  credit_watch watch{10s};
  clock::time_point t0{std::chrono::hours(1)};
  clock::time_point at(clock::duration d) const { return t0 + d; }
  static constexpr const char* pool = "sys.pool";
};

TEST_F(CreditWatch, APoolWithCreditOutAndNoDeliveryForTheLimitIsAskedAboutOnce) {
  watch.linked(t0);
  watch.pulled(pool, 64, t0);
  EXPECT_TRUE(watch.sweep(at(9s)).ask.empty());
  EXPECT_EQ(watch.sweep(at(10s)).ask, std::vector<std::string>{pool});
  EXPECT_TRUE(watch.sweep(at(11s)).ask.empty()) << "asked once, until the answer";
  EXPECT_EQ(watch.credit(pool), 64u);
}

TEST_F(CreditWatch, ReadyMessagesInTheAnswerMakeAStallCountedAndReported) {
  watch.linked(t0);
  watch.pulled(pool, 2, t0);
  ASSERT_EQ(watch.sweep(at(10s)).ask.size(), 1u);
  EXPECT_TRUE(watch.answer(pool, 3, false, at(10100ms)));
  EXPECT_EQ(watch.stalls().at(pool), 1u);
  EXPECT_EQ(watch.report(at(12s)), std::string(pool) + " for 12000 ms");
}

TEST_F(CreditWatch, DeliveriesUseCreditAndKeepThePoolOutOfSuspicion) {
  watch.linked(t0);
  watch.pulled(pool, 2, t0);
  watch.delivered(pool, at(8s));
  EXPECT_EQ(watch.credit(pool), 1u);
  EXPECT_TRUE(watch.sweep(at(17s)).ask.empty()) << "a delivery 9 s ago";
  watch.delivered(pool, at(17s));
  EXPECT_EQ(watch.credit(pool), 0u);
  EXPECT_TRUE(watch.sweep(at(60s)).ask.empty())
      << "no credit out: the pool waits for its workers, not the MQS";
}

TEST_F(CreditWatch, AnEmptyQueueOrAnAnswerThatCouldNotSayIsNoStall) {
  watch.linked(t0);
  watch.pulled(pool, 1, t0);
  ASSERT_EQ(watch.sweep(at(10s)).ask.size(), 1u);
  EXPECT_FALSE(watch.answer(pool, 0, false, at(10s))) << "idle, not stalled";
  EXPECT_TRUE(watch.sweep(at(15s)).ask.empty());
  ASSERT_EQ(watch.sweep(at(20s)).ask.size(), 1u) << "asked again a limit after the answer";
  EXPECT_FALSE(watch.answer(pool, 5, true, at(20s))) << "the MQS could not ask its broker";
  EXPECT_FALSE(watch.answer(pool, 5, false, at(20s))) << "answered already";
  EXPECT_TRUE(watch.stalls().empty());
}

TEST_F(CreditWatch, AQuestionUnansweredForALimitIsAStall) {
  watch.linked(t0);
  watch.pulled(pool, 1, t0);
  ASSERT_EQ(watch.sweep(at(10s)).ask.size(), 1u);
  EXPECT_TRUE(watch.sweep(at(19s)).stalled.empty());
  EXPECT_EQ(watch.sweep(at(20s)).stalled, std::vector<std::string>{pool});
  EXPECT_FALSE(watch.answer(pool, 5, false, at(21s))) << "a late answer counts no second stall";
  EXPECT_EQ(watch.stalls().at(pool), 1u);
}

TEST_F(CreditWatch, ANewLinkHasNoCreditOutAndItsOwnLimit) {
  watch.linked(t0);
  watch.pulled(pool, 5, t0);
  watch.linked(at(9s));
  EXPECT_EQ(watch.credit(pool), 0u);
  watch.pulled(pool, 5, at(9s));
  EXPECT_TRUE(watch.sweep(at(18s)).ask.empty());
  EXPECT_EQ(watch.sweep(at(19s)).ask.size(), 1u);
}

TEST_F(CreditWatch, CreditGivenAfterAQuietSpellStartsTheClockAndACancelledPoolIsForgotten) {
  watch.linked(t0);
  watch.pulled(pool, 1, t0);
  watch.delivered(pool, at(1s));
  watch.pulled(pool, 1, at(100s));
  EXPECT_TRUE(watch.sweep(at(105s)).ask.empty()) << "idle for 99 s, but its credit is 5 s old";
  watch.cancelled(pool);
  EXPECT_TRUE(watch.sweep(at(200s)).ask.empty());
  credit_watch off{clock::duration::zero()};
  off.pulled(pool, 1, t0);
  EXPECT_TRUE(off.sweep(at(1h)).ask.empty());
}

}  // namespace
}  // namespace dde::host
