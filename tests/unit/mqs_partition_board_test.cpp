// Which host consumes each partition of a partitioned topic (partition_board): an even share each,
// few moves when hosts come and go, a partition never in two hosts' hands, and each partition's
// deliveries in the order they came, a lost host's first.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "partition_board.hpp"
#include "partitions.hpp"

namespace dde::mqs {
namespace {

using board = partition_board<int>;

std::map<std::uint64_t, std::size_t> shares(const board& b, std::vector<std::uint64_t> members) {
  std::map<std::uint64_t, std::size_t> out;
  for (auto m : members) out[m] = b.share(m);
  return out;
}

std::vector<std::uint64_t> targets(const board& b) {
  std::vector<std::uint64_t> out;
  for (std::uint32_t p = 0; p < b.count(); ++p)
    out.push_back(b.draining_to(p) ? b.draining_to(p) : b.owner(p));
  return out;
}

TEST(PartitionBoard, OneHostOwnsEveryPartitionAndGetsEachInTheOrderItCame) {
  board b(4);
  b.join(7);
  for (int i = 0; i < 8; ++i) b.arrived(std::uint32_t(i % 2), i);
  std::vector<int> p0, p1;
  while (auto d = b.take_for(7)) (d->first == 0 ? p0 : p1).push_back(d->second);
  EXPECT_EQ(p0, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(p1, (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(b.in_hand(0), 4u);
  EXPECT_FALSE(b.take_for(8));  // not a member: nothing
}

TEST(PartitionBoard, HostsShareThePartitionsEvenlyAndAJoinMovesOnlyWhatItTakes) {
  board b(16);
  b.join(1);
  b.join(2);
  b.join(3);
  EXPECT_EQ(shares(b, {1, 2, 3}), (std::map<std::uint64_t, std::size_t>{{1, 6}, {2, 5}, {3, 5}}));
  auto before = targets(b);
  b.join(4);
  EXPECT_EQ(shares(b, {1, 2, 3, 4}), (std::map<std::uint64_t, std::size_t>{{1, 4}, {2, 4}, {3, 4}, {4, 4}}));
  auto after = targets(b);
  int moved = 0;
  for (std::size_t p = 0; p < after.size(); ++p) {
    if (after[p] == before[p]) continue;
    ++moved;
    EXPECT_EQ(after[p], 4u) << "partition " << p << " moved between two hosts that stay";
  }
  EXPECT_EQ(moved, 4);
  b.leave(2);  // its four go to the others, nothing else moves
  EXPECT_EQ(shares(b, {1, 3, 4}), (std::map<std::uint64_t, std::size_t>{{1, 6}, {3, 5}, {4, 5}}));
  auto left = targets(b);
  for (std::size_t p = 0; p < left.size(); ++p)
    if (after[p] != 2) {
      EXPECT_EQ(left[p], after[p]) << "partition " << p;
    }
}

TEST(PartitionBoard, APartitionMovesOnlyOnceItsOwnerSettledWhatItHadInHand) {
  board b(1);
  b.join(1);
  b.arrived(0, 10);
  b.arrived(0, 11);
  b.arrived(0, 12);
  ASSERT_EQ(b.take_for(1)->second, 10);
  ASSERT_EQ(b.take_for(1)->second, 11);
  b.leave(1);  // cancelled with two in hand
  b.join(2);
  EXPECT_EQ(b.owner(0), board::nobody);  // draining: sent to no one
  EXPECT_EQ(b.draining_to(0), 2u);
  EXPECT_FALSE(b.take_for(1));
  EXPECT_FALSE(b.take_for(2));
  EXPECT_EQ(b.settled(0), board::nobody);  // one still in hand
  EXPECT_FALSE(b.take_for(2));
  EXPECT_EQ(b.settled(0), 2u);  // drained: host 2 may be sent what waits
  EXPECT_EQ(b.owner(0), 2u);
  ASSERT_EQ(b.take_for(2)->second, 12);
}

TEST(PartitionBoard, ALostHostsDeliveriesGoFirstInTheirOrderToTheNextOwner) {
  board b(2);
  b.join(1);
  b.join(2);
  std::uint32_t mine = b.owner(0) == 1 ? 0 : 1;
  for (int i = 0; i < 5; ++i) b.arrived(mine, i);
  ASSERT_EQ(b.take_for(1)->second, 0);
  ASSERT_EQ(b.take_for(1)->second, 1);
  ASSERT_EQ(b.take_for(1)->second, 2);
  b.settled(mine);  // 0 is done
  b.lose(1, {{mine, {1, 2}}});
  EXPECT_EQ(b.owner(mine), 2u);
  EXPECT_EQ(b.in_hand(mine), 0u);
  std::vector<int> got;
  while (auto d = b.take_for(2)) got.push_back(d->second);
  EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 4}));
}

TEST(PartitionBoard, WithNoHostLeftDeliveriesWaitForTheNext) {
  board b(3);
  b.join(1);
  b.arrived(0, 1);
  ASSERT_TRUE(b.take_for(1));
  b.leave(1);
  b.arrived(0, 2);
  b.arrived(2, 3);
  EXPECT_EQ(b.waiting(), 2u);
  b.join(5);
  EXPECT_EQ(b.draining_to(0), 5u);  // host 1 still has one of partition 0 in hand
  auto d = b.take_for(5);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->first, 2u);
  EXPECT_FALSE(b.take_for(5));
  EXPECT_EQ(b.settled(0), 5u);
  EXPECT_EQ(b.take_for(5)->second, 2);
}

TEST(PartitionBoard, AnOwnersPartitionsTakeTurns) {
  board b(3);
  b.join(1);
  for (int i = 0; i < 3; ++i)
    for (std::uint32_t p = 0; p < 3; ++p) b.arrived(p, int(p) * 10 + i);
  std::vector<std::uint32_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(b.take_for(1)->first);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2}));
}

// Hosts join, cancel, disconnect, take and settle at random: a partition's deliveries are never in
// two hosts' hands, each is sent in the order it came (a lost host's again first), none is lost.
TEST(PartitionBoard, RandomMembershipKeepsEachPartitionInOneHandAndInOrder) {
  std::mt19937 rng(20261207);
  constexpr std::uint32_t parts = 8;
  board b(parts);
  int next_seq = 0;
  std::map<std::uint32_t, std::set<int>> unsettled;  // by partition: came, not settled
  std::map<std::uint64_t, std::map<std::uint32_t, std::vector<int>>> hands;  // by host, by partition
  std::set<std::uint64_t> connected;
  std::uint64_t next_host = 1;
  int settled_total = 0;
  auto holders = [&](std::uint32_t p) {
    int n = 0;
    for (auto& [h, by] : hands) n += by.count(p) && !by.at(p).empty();
    return n;
  };
  for (int step = 0; step < 20000; ++step) {
    int what = int(rng() % 100);
    if (what < 4 || connected.empty()) {
      connected.insert(next_host);
      b.join(next_host++);
    } else if (what < 6 && connected.size() > 1) {
      auto h = *std::next(connected.begin(), long(rng() % connected.size()));
      b.leave(h);  // still connected: settles what it has in hand
      connected.erase(h);
    } else if (what < 8 && connected.size() > 1) {
      auto h = *std::next(connected.begin(), long(rng() % connected.size()));
      b.lose(h, hands[h]);
      hands.erase(h);
      connected.erase(h);
    } else if (what < 50) {
      auto p = std::uint32_t(rng() % parts);
      unsettled[p].insert(next_seq);
      b.arrived(p, next_seq++);
    } else if (what < 75) {
      auto h = *std::next(connected.begin(), long(rng() % connected.size()));
      if (auto d = b.take_for(h)) {
        auto [p, seq] = *d;
        // The oldest of its partition that is neither settled nor in a hand.
        int oldest = -1;
        for (int s : unsettled[p]) {
          bool held = false;
          for (auto& [other, by] : hands)
            if (by.count(p) && std::find(by[p].begin(), by[p].end(), s) != by[p].end()) held = true;
          if (!held) {
            oldest = s;
            break;
          }
        }
        ASSERT_EQ(seq, oldest) << "step " << step << " partition " << p;
        hands[h][p].push_back(seq);
        ASSERT_LE(holders(p), 1) << "step " << step << ": partition " << p << " in two hands";
      }
    } else {
      // Some host settles the oldest it has in hand of some partition (hosts that left included).
      if (hands.empty()) continue;
      auto it = std::next(hands.begin(), long(rng() % hands.size()));
      for (auto& [p, seqs] : it->second) {
        if (seqs.empty()) continue;
        unsettled[p].erase(seqs.front());
        seqs.erase(seqs.begin());
        b.settled(p);
        ++settled_total;
        break;
      }
    }
  }
  // Whoever stays takes and settles everything that is left.
  if (connected.empty()) b.join(next_host);
  for (auto& [h, by] : hands)
    for (auto& [p, seqs] : by)
      for (int s : seqs) {
        unsettled[p].erase(s);
        b.settled(p);
      }
  hands.clear();
  for (bool any = true; any;) {
    any = false;
    for (auto m : b.members())
      while (auto d = b.take_for(m)) {
        any = true;
        ASSERT_EQ(d->second, *unsettled[d->first].begin());
        unsettled[d->first].erase(d->second);
        b.settled(d->first);
      }
  }
  for (auto& [p, left] : unsettled) EXPECT_TRUE(left.empty()) << "partition " << p << " lost messages";
  EXPECT_GT(settled_total, 500);  // the walk went through many settles, not only joins and losses
}

TEST(PartitionOf, AKeysMessagesShareAPartitionAndKeysSpreadOverAll) {
  partitioning p{8, "user"};
  auto of = [&](const std::string& body) { return partition_of(body, p, "id-1"); };
  EXPECT_EQ(of(R"({"user":"ann","n":1})"), of(R"({"n":2,"user":"ann"})"));
  EXPECT_EQ(of(R"({"user":42})"), of(R"({"user":42,"x":[1]})"));  // a number as its JSON text
  std::set<std::uint32_t> used;
  for (int u = 0; u < 200; ++u) {
    auto part = of(R"({"user":"u)" + std::to_string(u) + R"("})");
    ASSERT_LT(part, 8u);
    used.insert(part);
  }
  EXPECT_EQ(used.size(), 8u);
  // No key (or no JSON): by the message id, so the same message always lands in the same place.
  EXPECT_EQ(partition_of("not json", p, "m-7"), partition_of(R"({"other":1})", p, "m-7"));
  EXPECT_EQ(partition_of(R"({"user":"ann"})", partitioning{1, "user"}, "x"), 0u);
}

TEST(PartitionDirectory, KnowsWhatItWasToldAndIsEmptyUntilThen) {
  partition_directory d;
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.find("a.b"));
  d.learn("a.b", {4, "k"});
  EXPECT_FALSE(d.empty());
  ASSERT_TRUE(d.find("a.b"));
  EXPECT_EQ(d.find("a.b")->count, 4u);
  EXPECT_FALSE(d.find("c.d"));
}

}  // namespace
}  // namespace dde::mqs
