// When the enqueuer gives up on its publishing connection: nacks that keep coming, confirms overdue.
#include <gtest/gtest.h>

#include "confirm_watch.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using clock = confirm_watch::clock;
const clock::time_point t0 = clock::time_point{} + 1h;

TEST(ConfirmWatch, NacksThatKeepComingForTwoSecondsReplaceTheConnection) {
  confirm_watch w(5000ms);
  for (auto t = 0ms; t < 2000ms; t += 500ms) EXPECT_FALSE(w.nacks_came(t0 + t)) << t.count();
  auto why = w.nacks_came(t0 + 2000ms);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "the broker has kept nacking publishes for 2000 ms");
}

TEST(ConfirmWatch, APauseOfMoreThanASecondBetweenNacksStartsTheCountAgain) {
  confirm_watch w(5000ms);
  EXPECT_FALSE(w.nacks_came(t0));
  EXPECT_FALSE(w.nacks_came(t0 + 900ms));
  EXPECT_FALSE(w.nacks_came(t0 + 2001ms));  // 1101 ms after the last: a new run of nacks
  EXPECT_FALSE(w.nacks_came(t0 + 2900ms));
  EXPECT_FALSE(w.nacks_came(t0 + 3800ms));
  EXPECT_TRUE(w.nacks_came(t0 + 4001ms));  // 2000 ms into the new run
}

TEST(ConfirmWatch, ANewConnectionStartsWithNoNacks) {
  confirm_watch w(5000ms);
  EXPECT_FALSE(w.nacks_came(t0));
  EXPECT_FALSE(w.nacks_came(t0 + 1000ms));
  w.connection_lost();
  EXPECT_FALSE(w.nacks_came(t0 + 2000ms));
}

TEST(ConfirmWatch, ConfirmsAreOverdueOnlyWithMessagesWaitingForThem) {
  confirm_watch w(1000ms);
  w.waiting(t0);
  EXPECT_FALSE(w.overdue(0, t0 + 10s));
  EXPECT_FALSE(w.overdue(3, t0 + 999ms));
  auto why = w.overdue(3, t0 + 1000ms);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "3 messages had no confirm for 1000 ms");
}

TEST(ConfirmWatch, EachReplacementWithoutAConfirmDoublesTheWaitUpToEightTimes) {
  confirm_watch w(1000ms);
  auto t = t0;
  w.waiting(t);
  for (auto limit : {1000ms, 2000ms, 4000ms, 8000ms, 8000ms}) {
    EXPECT_FALSE(w.overdue(1, t + limit - 1ms)) << limit.count();
    EXPECT_TRUE(w.overdue(1, t + limit)) << limit.count();
    t += limit;
    w.waiting(t);  // the next connection publishes them again
  }
  w.settled(t, true);  // a confirm: back to the first wait
  EXPECT_TRUE(w.overdue(1, t + 1000ms));
}

TEST(ConfirmWatch, ANackSettlesButDoesNotShortenTheNextWait) {
  confirm_watch w(1000ms);
  w.waiting(t0);
  EXPECT_TRUE(w.overdue(1, t0 + 1000ms));  // the wait doubles
  w.settled(t0 + 1000ms, false);
  EXPECT_FALSE(w.overdue(1, t0 + 2999ms));
  EXPECT_TRUE(w.overdue(1, t0 + 3000ms));
}

TEST(ConfirmWatch, NothingIsOverdueWhileTheBrokerBlocksPublishingOrWithNoTimeout) {
  confirm_watch w(1000ms);
  w.waiting(t0);
  w.blocked();
  EXPECT_FALSE(w.overdue(5, t0 + 1h));
  w.unblocked(t0 + 1h);  // the wait starts again
  EXPECT_FALSE(w.overdue(5, t0 + 1h + 999ms));
  EXPECT_TRUE(w.overdue(5, t0 + 1h + 1000ms));
  confirm_watch never(0ms);
  never.waiting(t0);
  EXPECT_FALSE(never.overdue(5, t0 + 24h));
}

}  // namespace
}  // namespace dde::mqs
