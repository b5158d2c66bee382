#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "reply_race.hpp"
#include "routing.hpp"

namespace {

using dde::router_kind;
using dde::host::pool_ledger;

pool_ledger make(router_kind kind, std::size_t workers, std::size_t credits) {
  pool_ledger l(kind, credits, 42);
  for (std::size_t i = 0; i < workers; ++i) l.add_worker("w" + std::to_string(i), "localhost");
  return l;
}

TEST(Router, RoundRobinVisitsEveryWorkerInTurn) {
  auto l = make(router_kind::round_robin, 3, 4);
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) {
    auto t = l.select();
    ASSERT_EQ(t.size(), 1u);
    l.assign(t[0]);
    order.push_back(t[0]);
  }
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Router, RoundRobinSkipsWorkersWithoutRoom) {
  auto l = make(router_kind::round_robin, 3, 1);
  l.assign(1);
  auto a = l.select();
  l.assign(a[0]);
  auto b = l.select();
  l.assign(b[0]);
  EXPECT_EQ(a[0], 0u);
  EXPECT_EQ(b[0], 2u);
  EXPECT_TRUE(l.select().empty());
  l.finish(1);
  EXPECT_EQ(l.select(), std::vector<std::size_t>{1});
}

TEST(Router, AClosedWorkerKeepsWhatItHoldsButIsGivenNothingMoreAndAddsNoRoom) {
  for (auto kind : {router_kind::round_robin, router_kind::random, router_kind::broadcast}) {
    auto l = make(kind, 2, 4);
    l.assign(0);
    l.assign(0);
    l.set_open(0, false);
    EXPECT_EQ(l.in_flight(0), 2u) << "its messages still count until it finishes them";
    EXPECT_EQ(l.find("w0"), 0u) << "replies to its asks still reach it";
    EXPECT_EQ(l.room(), 4u);
    for (int i = 0; i < 4; ++i) {
      auto t = l.select();
      ASSERT_EQ(t, std::vector<std::size_t>{1});
      l.assign(1);
    }
    EXPECT_TRUE(l.select().empty());
    EXPECT_TRUE(l.select_custom({0}).empty()) << "a custom router cannot pick it either";
    l.set_open(1, false);
    EXPECT_EQ(l.room(), 0u);
    EXPECT_EQ(l.take_credit_request(), 0u) << "a pool whose every worker is closed pulls nothing";
    l.set_open(0, true);
    l.finish(0);
    EXPECT_EQ(l.select(), std::vector<std::size_t>{0});
  }
}

TEST(Router, RandomPicksOnlyWorkersWithRoomAndReachesAllOfThem) {
  auto l = make(router_kind::random, 4, 1000);
  l.assign(2);
  for (int i = 0; i < 999; ++i) l.assign(2);  // worker 2 is full
  std::set<std::size_t> seen;
  for (int i = 0; i < 200; ++i) {
    auto t = l.select();
    ASSERT_EQ(t.size(), 1u);
    EXPECT_NE(t[0], 2u);
    seen.insert(t[0]);
  }
  EXPECT_EQ(seen, (std::set<std::size_t>{0, 1, 3}));
}

TEST(Router, BroadcastGoesToEveryWorkerOrWaits) {
  auto l = make(router_kind::broadcast, 3, 1);
  EXPECT_EQ(l.select(), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(l.room(), 1u);
  l.assign(1);
  EXPECT_TRUE(l.select().empty());
  EXPECT_EQ(l.room(), 0u);
}

TEST(Credits, RequestsNeverExceedTheRoomOfThePool) {
  auto l = make(router_kind::round_robin, 2, 8);
  EXPECT_EQ(l.take_credit_request(), 16u);
  EXPECT_EQ(l.take_credit_request(), 0u);  // already asked for everything
  for (int i = 0; i < 16; ++i) {
    l.on_delivery();
    l.assign(l.select()[0]);
  }
  EXPECT_EQ(l.take_credit_request(), 0u);
  l.finish(0);
  l.finish(1);
  EXPECT_EQ(l.take_credit_request(), 2u);  // one credit back per done
}

TEST(Credits, WhileSomeAreOutstandingCreditsGoBackInChunksOfHalfTheWindow) {
  auto l = make(router_kind::round_robin, 2, 8);  // a window of 16
  EXPECT_EQ(l.take_credit_request(), 16u);
  for (int i = 0; i < 10; ++i) {
    l.on_delivery();
    l.assign(l.select()[0]);
  }
  for (int i = 0; i < 7; ++i) {
    l.finish(std::size_t(i % 2));
    EXPECT_EQ(l.take_credit_request(), 0u)
        << "6 asked are still to come; " << i + 1 << " back is less than 8";
  }
  l.finish(1);
  EXPECT_EQ(l.take_credit_request(), 8u) << "half the window back: asked in one pull";
  EXPECT_EQ(l.requested(), 14u);
  for (int i = 0; i < 14; ++i) {
    l.on_delivery();
    l.assign(l.select()[0]);
  }
  EXPECT_EQ(l.room(), 0u);
  l.finish(0);
  EXPECT_EQ(l.take_credit_request(), 1u)
      << "nothing asked is left: the room is asked for at once, however small";
  // A pool of one worker with one credit asks for each message.
  auto one = make(router_kind::round_robin, 1, 1);
  EXPECT_EQ(one.take_credit_request(), 1u);
  one.on_delivery();
  one.assign(0);
  one.finish(0);
  EXPECT_EQ(one.take_credit_request(), 1u);
}

TEST(Credits, AReconnectVoidsOutstandingRequestsButNotMessagesInFlight) {
  auto l = make(router_kind::round_robin, 1, 4);
  EXPECT_EQ(l.take_credit_request(), 4u);
  l.on_delivery();
  l.assign(0);
  l.reset_requested();
  EXPECT_EQ(l.take_credit_request(), 3u);
}

TEST(Credits, APausedPoolAsksForNothing) {
  auto l = make(router_kind::round_robin, 2, 4);
  l.set_paused(true);
  EXPECT_EQ(l.take_credit_request(), 0u);
  l.set_paused(false);
  EXPECT_EQ(l.take_credit_request(), 8u);
}

TEST(Router, DeadWorkersTakeNoMessagesAndRestartedOnesKeepTheirQueue) {
  auto l = make(router_kind::round_robin, 2, 2);
  l.assign(0);
  l.set_alive(0, true, "w0-restarted");  // restart: the queued message still counts
  EXPECT_EQ(l.in_flight(0), 1u);
  EXPECT_EQ(l.find("w0-restarted"), 0u);
  EXPECT_EQ(l.find("w0"), pool_ledger::npos);
  l.set_alive(1, false);
  for (int i = 0; i < 3; ++i) {
    auto t = l.select();
    if (t.empty()) break;
    EXPECT_EQ(t[0], 0u);
    l.assign(t[0]);
  }
  EXPECT_EQ(l.room(), 0u);
}

TEST(Router, CustomChoicesAreFilteredAndFallBackWhenUnusable) {
  auto l = make(router_kind::custom, 3, 2);
  EXPECT_EQ(l.select_custom({2}), std::vector<std::size_t>{2});
  EXPECT_EQ(l.select_custom({7, 2, 2}), std::vector<std::size_t>{2});
  l.set_alive(2, false);
  EXPECT_EQ(l.select_custom({2}).size(), 1u);  // falls back to round-robin among the living
  EXPECT_NE(l.select_custom({2})[0], 2u);
}

}  // namespace

namespace {

TEST(SubPools, EachKeyHasItsCapacityAndTheDefaultCoversTheRest) {
  dde::sub_pool_spec spec;
  spec.key = "service";
  spec.capacity = {{"write", 1}};
  spec.default_capacity = 2;
  dde::host::sub_pool_ledger subs(spec);
  ASSERT_TRUE(subs.enabled());
  dde::message m;
  m.body_ = {{"service", "write"}};
  EXPECT_EQ(subs.key_of(m), "write");
  m.body_ = {{"service", 7}};
  EXPECT_EQ(subs.key_of(m), "7");
  m.body_ = {{"other", 1}};
  EXPECT_EQ(subs.key_of(m), "");
  EXPECT_TRUE(subs.has_room("write"));
  subs.start("write");
  EXPECT_FALSE(subs.has_room("write"));
  EXPECT_TRUE(subs.has_room("read"));
  subs.start("read");
  subs.start("read");
  EXPECT_FALSE(subs.has_room("read"));
  EXPECT_EQ(subs.in_flight("read"), 2u);
  subs.finish("read");
  EXPECT_TRUE(subs.has_room("read"));
  subs.finish("write");
  EXPECT_TRUE(subs.has_room("write"));
  EXPECT_FALSE(dde::host::sub_pool_ledger({}).enabled());
}

TEST(SubPools, HeldMessagesUseThePoolsRoom) {
  auto l = make(router_kind::round_robin, 2, 4);
  EXPECT_EQ(l.room(), 8u);
  l.set_held(3);
  EXPECT_EQ(l.room(), 5u);
  l.set_held(20);
  EXPECT_EQ(l.room(), 0u);
}

}  // namespace

namespace {

TEST(Router, SmallestMailboxPicksTheWorkerWithTheFewestMessages) {
  auto l = make(router_kind::smallest_mailbox, 3, 8);
  l.assign(0);
  l.assign(0);
  l.assign(1);
  EXPECT_EQ(l.select(), std::vector<std::size_t>{2});
  l.assign(2);
  auto least = l.select();  // which of the two: the one that started last (tested below)
  ASSERT_EQ(least.size(), 1u);
  EXPECT_NE(least[0], 0u) << "1 and 2 hold one each; 0 holds two";
  // Among equally loaded busy workers, the one whose current message started last.
  auto busy = make(router_kind::smallest_mailbox, 2, 8);
  busy.assign(0);  // worker 0 took a message first...
  auto later = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  while (std::chrono::steady_clock::now() < later) {
  }
  busy.assign(1);  // ...worker 1 one later: it is the likelier to finish first
  EXPECT_EQ(busy.select(), std::vector<std::size_t>{1});
  EXPECT_EQ(busy.select(), std::vector<std::size_t>{1}) << "not round-robin among unequal starts";
  // Equal workers share the load in turn.
  auto even = make(router_kind::smallest_mailbox, 3, 8);
  std::set<std::size_t> picked;
  for (int k = 0; k < 3; ++k) {
    auto s = even.select();
    ASSERT_EQ(s.size(), 1u);
    even.assign(s[0]);
    picked.insert(s[0]);
  }
  EXPECT_EQ(picked.size(), 3u);
}

TEST(Router, PeakInFlightIsTheMostAWorkerHeldAtOnceAndStartsAgainWithANewInstance) {
  auto l = make(router_kind::smallest_mailbox, 2, 8);
  EXPECT_EQ(l.peak_in_flight(0), 0u);
  l.assign(0);
  l.assign(0);
  l.assign(0);
  l.finish(0);
  l.finish(0);
  l.assign(0);
  l.assign(1);
  EXPECT_EQ(l.in_flight(0), 2u);
  EXPECT_EQ(l.peak_in_flight(0), 3u) << "the most it held, not what it holds";
  EXPECT_EQ(l.peak_in_flight(1), 1u);
  l.set_alive(0, false);
  l.set_alive(0, true, "w0-restarted");  // a restarted worker keeps its queued messages (none here)
  EXPECT_EQ(l.peak_in_flight(0), 0u) << "a new instance starts its own peak";
  l.assign(0);
  EXPECT_EQ(l.peak_in_flight(0), 1u);
}

TEST(Router, ConsistentHashKeepsAKeyOnOneWorkerAndMovesAboutOneNthWhenOneIsAdded) {
  auto l = make(router_kind::consistent_hash, 4, 1000000);
  std::vector<std::size_t> before;
  std::vector<std::size_t> per_worker(5, 0);
  for (int k = 0; k < 10000; ++k) {
    auto key = "user-" + std::to_string(k);
    auto s = l.select(key);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(l.select(key), s) << "the same key, the same worker";
    before.push_back(s[0]);
    ++per_worker[s[0]];
  }
  for (std::size_t w = 0; w < 4; ++w) EXPECT_GT(per_worker[w], 1500u) << "worker " << w << " gets its share";
  l.add_worker("w4", "localhost");
  int moved = 0;
  for (int k = 0; k < 10000; ++k) {
    auto now = l.select("user-" + std::to_string(k));
    if (now[0] != before[std::size_t(k)]) {
      ++moved;
      EXPECT_EQ(now[0], 4u) << "a key only moves to the new worker";
    }
  }
  EXPECT_GT(moved, 1000);  // about 1/5 of the keys...
  EXPECT_LT(moved, 3000);  // ...and no more
  // A dead worker's keys go elsewhere and come back with it.
  l.set_alive(4, false);
  for (int k = 0; k < 10000; ++k) EXPECT_EQ(l.select("user-" + std::to_string(k))[0], before[std::size_t(k)]);
}

TEST(Router, ConsistentHashWaitsForTheKeysWorkerInsteadOfPickingAnother) {
  auto l = make(router_kind::consistent_hash, 3, 1);
  auto owner = l.owner_of("k");
  l.assign(owner);
  EXPECT_TRUE(l.select("k").empty());
  l.finish(owner);
  EXPECT_EQ(l.select("k"), std::vector<std::size_t>{owner});
}

}  // namespace

namespace {

using dde::host::reply_race;

TEST(Router, ScatterGatherGivesACopyToEveryWorkerWithRoomAndSkipsAFullOne) {
  auto l = make(router_kind::scatter_gather, 3, 1);
  EXPECT_EQ(l.select(), (std::vector<std::size_t>{0, 1, 2}));
  l.assign(1);
  EXPECT_EQ(l.select(), (std::vector<std::size_t>{0, 2})) << "a full worker does not stall the pool";
  l.assign(0);
  l.assign(2);
  EXPECT_TRUE(l.select().empty());
}

TEST(Router, TailChoppingAsksOneWorkerThenOnesNotAskedYet) {
  auto l = make(router_kind::tail_chopping, 3, 4);
  auto first = l.select();
  ASSERT_EQ(first.size(), 1u);
  std::vector<std::size_t> asked = first;
  for (int k = 0; k < 2; ++k) {
    auto next = l.select_other(asked);
    ASSERT_NE(next, pool_ledger::npos);
    EXPECT_EQ(std::count(asked.begin(), asked.end(), next), 0);
    asked.push_back(next);
  }
  EXPECT_EQ(l.select_other(asked), pool_ledger::npos) << "every worker was asked";
}

TEST(Router, OnlyTheFirstReplyToARacedMessageIsClaimed) {
  reply_race race;
  race.open("m1");
  race.count_copies(3, false);
  EXPECT_FALSE(race.answered("m1"));
  EXPECT_TRUE(race.claim("m1"));
  EXPECT_TRUE(race.answered("m1"));
  EXPECT_FALSE(race.claim("m1"));
  EXPECT_FALSE(race.claim("m1"));
  EXPECT_TRUE(race.claim("other")) << "a message that is not raced is always answered";
  race.close("m1");
  EXPECT_TRUE(race.claim("m1")) << "a redelivery after the race ended is a new race";
  auto c = race.snapshot();
  EXPECT_EQ(c.answered, 1u);
  EXPECT_EQ(c.dropped, 2u);
  EXPECT_EQ(c.copies, 3u);
}

}  // namespace
