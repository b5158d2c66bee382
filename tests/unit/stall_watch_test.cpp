// The delivery watchdog's bookkeeping (dde/core/stall_watch.hpp), on a clock the test moves.
#include "dde/core/stall_watch.hpp"

#include <gtest/gtest.h>

namespace dde {
namespace {

using namespace std::chrono_literals;
using clock = stall_watch::clock;

class StallWatch : public ::testing::Test {
 protected:
  stall_watch watch{10s};
  clock::time_point t0{std::chrono::hours(1)};
  clock::time_point traffic = t0;
  bool waiting = true;
  std::vector<std::string> sweep(clock::duration at) {
    return watch.sweep(t0 + at, {{"sys.pool", traffic, waiting}});
  }
};

TEST_F(StallWatch, AQuietTopicWhoseHostsWaitIsAskedAboutOnceItsQuietReachesTheLimit) {
  EXPECT_TRUE(sweep(9999ms).empty());
  EXPECT_EQ(sweep(10s), std::vector<std::string>{"sys.pool"});
  EXPECT_TRUE(sweep(11s).empty()) << "asked once, until the answer";
}

TEST_F(StallWatch, NoHostWaitingOrTrafficMeansNoSuspicion) {
  waiting = false;
  EXPECT_TRUE(sweep(60s).empty()) << "no host holds credit, or deliveries wait in the MQS for it";
  waiting = true;
  traffic = t0 + 55s;
  EXPECT_TRUE(sweep(60s).empty()) << "an ack or a delivery 5 s ago";
}

TEST_F(StallWatch,
       ReadyMessagesAndNoTrafficSinceTheQuestionMakeAStallReportedUntilTheChannelMovesAndALimitPassed) {
  ASSERT_EQ(sweep(10s).size(), 1u);
  EXPECT_TRUE(watch.answer("sys.pool", 5, traffic, t0 + 10100ms));
  EXPECT_EQ(watch.report(t0 + 12s), "sys.pool for 12000 ms");
  traffic = t0 + 10200ms;  // consumed afresh: the new channel starts
  EXPECT_TRUE(sweep(11s).empty());
  EXPECT_EQ(watch.report(t0 + 11s), "sys.pool for 11000 ms") << "reported for one limit at least";
  EXPECT_TRUE(sweep(20150ms).empty());
  EXPECT_EQ(watch.report(t0 + 20150ms), "") << "moving again, a limit later";
}

TEST_F(StallWatch, AnIdleQueueOrTrafficMeanwhileIsNoStallAndIsAskedAgainOnlyALimitLater) {
  ASSERT_EQ(sweep(10s).size(), 1u);
  EXPECT_FALSE(watch.answer("sys.pool", 0, traffic, t0 + 10100ms)) << "nothing ready: idle, not stalled";
  EXPECT_TRUE(sweep(15s).empty());
  EXPECT_EQ(sweep(20100ms).size(), 1u) << "asked again a limit after the answer";
  EXPECT_FALSE(watch.answer("sys.pool", 7, t0 + 20150ms, t0 + 20200ms)) << "a delivery came meanwhile";
  EXPECT_EQ(watch.report(t0 + 20200ms), "");
  EXPECT_FALSE(watch.answer("other.pool", 7, traffic, t0 + 20200ms)) << "never asked";
}

TEST_F(StallWatch, AnIdleTopicIsAskedAboutLessAndLessOftenUntilItMoves) {
  clock::duration asked_at = 10s;
  ASSERT_EQ(sweep(asked_at).size(), 1u);
  std::vector<clock::duration> gaps;
  for (int i = 0; i < 5; ++i) {
    ASSERT_FALSE(watch.answer("sys.pool", 0, traffic, t0 + asked_at));
    auto next = asked_at;
    do next += 1s;
    while (sweep(next).empty() && next < asked_at + 200s);
    gaps.push_back(next - asked_at);
    asked_at = next;
  }
  EXPECT_EQ(gaps, (std::vector<clock::duration>{10s, 20s, 40s, 80s, 80s})) << "at most 8 limits apart";
  traffic = t0 + asked_at;  // a delivery: the next quiet spell starts from one limit again
  ASSERT_FALSE(watch.answer("sys.pool", 0, traffic, t0 + asked_at));
  EXPECT_TRUE(sweep(asked_at + 1s).empty());
  EXPECT_EQ(sweep(asked_at + 10s).size(), 1u);
}

TEST_F(StallWatch, ATopicNoLongerConsumedIsForgottenAndALimitOfZeroWatchesNothing) {
  ASSERT_EQ(sweep(10s).size(), 1u);
  ASSERT_TRUE(watch.answer("sys.pool", 5, traffic, t0 + 10s));
  EXPECT_TRUE(watch.sweep(t0 + 11s, {}).empty());
  EXPECT_EQ(watch.report(t0 + 11s), "");
  stall_watch off{clock::duration::zero()};
  EXPECT_TRUE(off.sweep(t0 + 1h, {{"sys.pool", t0, true}}).empty());
}

}  // namespace
}  // namespace dde
