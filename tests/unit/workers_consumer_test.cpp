// The consumer sample worker's stats: the longest pause between two consecutive receipts
// (max_gap_us, from the receipt before it to the one after it), which the benchmark suite's
// experiment 8 reads as the end of an outage.
#include <gtest/gtest.h>

#include <thread>

#include "cluster.hpp"
#include "dde_test.hpp"
#include "recording_context.hpp"

namespace dde::test {
namespace {

std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(Consumer, StatsHoldTheLongestGapBetweenTwoReceipts) {
  auto dir = fresh_dir("consumer-gap");
  plugin_harness h("consumer");
  h.create({{"stats_dir", dir.string()}});
  h.receive(make_message({{"seq", 0}}));
  h.receive(make_message({{"seq", 1}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  h.receive(make_message({{"seq", 2}}));
  const auto before_pause = wall_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  const auto after_pause = wall_us();
  h.receive(make_message({{"seq", 3}}));
  h.receive(make_message({{"seq", 4}}));
  h.w->before_kill();  // writes the stats now

  auto stats = all_stats(dir, "consumer-");
  ASSERT_EQ(stats.size(), 1u);
  auto& s = stats.front();
  EXPECT_EQ(s.value("received", 0), 5);
  const auto gap = s.value("max_gap_us", std::int64_t(0)), from = s.value("max_gap_from_us", std::int64_t(0)),
             to = s.value("max_gap_to_us", std::int64_t(0));
  EXPECT_GE(gap, 80000) << s.dump();
  EXPECT_EQ(to - from, gap) << s.dump();
  EXPECT_LE(from, before_pause) << "the gap starts at seq 2's receipt";
  EXPECT_GE(to, after_pause) << "and ends at seq 3's";
  EXPECT_LE(to, s.value("last_us", std::int64_t(0)));
  EXPECT_GE(from, s.value("first_us", std::int64_t(0)));
}

}  // namespace
}  // namespace dde::test
