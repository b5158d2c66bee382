// The consumer sample worker's stats: the longest pauses between two consecutive receipts
// (max_gap_us, and "gaps": the longest few, each from the receipt before it to the one after it),
// which the benchmark suite's experiment 8 reads to find an outage's end.
#include <gtest/gtest.h>

#include <algorithm>
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

TEST(Consumer, StatsKeepTheLongestFewGapsLongestFirstNotOnlyTheLongest) {
  // Experiment 8's outage is the longest gap that ended after the fault; on a loaded machine an
  // earlier stall can be longer, so the outage must still be among the kept gaps.
  auto dir = fresh_dir("consumer-gaps");
  plugin_harness h("consumer");
  h.create({{"stats_dir", dir.string()}});
  for (int i = 0; i < 12; ++i) h.receive(make_message({{"seq", i}}));
  const auto before_long = wall_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  const auto after_long = wall_us();
  h.receive(make_message({{"seq", 12}}));
  const auto before_short = wall_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto after_short = wall_us();
  h.receive(make_message({{"seq", 13}}));
  h.w->before_kill();

  auto stats = all_stats(dir, "consumer-");
  ASSERT_EQ(stats.size(), 1u);
  auto gaps = stats.front().value("gaps", nlohmann::json::array());
  ASSERT_TRUE(gaps.is_array()) << stats.front().dump();
  EXPECT_LE(gaps.size(), 8u) << "only the longest few are kept: " << gaps.dump();
  auto spans = [&](std::int64_t from, std::int64_t to) {
    return std::any_of(gaps.begin(), gaps.end(), [&](const nlohmann::json& g) {
      return g[0].get<std::int64_t>() <= from && g[1].get<std::int64_t>() >= to;
    });
  };
  EXPECT_TRUE(spans(before_long, after_long)) << gaps.dump();
  EXPECT_TRUE(spans(before_short, after_short)) << "a shorter, later gap is kept too: " << gaps.dump();
  for (std::size_t i = 1; i < gaps.size(); ++i)
    EXPECT_GE(gaps[i - 1][1].get<std::int64_t>() - gaps[i - 1][0].get<std::int64_t>(),
              gaps[i][1].get<std::int64_t>() - gaps[i][0].get<std::int64_t>())
        << "longest first: " << gaps.dump();
}

TEST(Consumer, StampedMessagesAfterTheFirstSecondGiveLatencyPercentiles) {
  auto dir = fresh_dir("consumer-latency");
  plugin_harness h("consumer");
  h.create({{"stats_dir", dir.string()}});
  // Received in the first second: the flow setting up, not counted.
  h.receive(make_message({{"seq", 0}, {"sent_us", wall_us() - 900000}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the span under test, not a wait
  for (int i = 1; i <= 98; ++i) h.receive(make_message({{"seq", i}, {"sent_us", wall_us() - 2000}}));
  h.receive(make_message({{"seq", 99}, {"sent_us", wall_us() - 300000}}));
  h.receive(make_message({{"seq", 100}}));  // unstamped: counted, no latency
  h.w->before_kill();

  auto stats = all_stats(dir, "consumer-");
  ASSERT_EQ(stats.size(), 1u);
  auto& s = stats.front();
  EXPECT_EQ(s.value("received", 0), 101);
  EXPECT_EQ(s.value("latency_count", 0), 99) << s.dump();
  const auto p50 = s.value("latency_p50_us", std::int64_t(0)),
             p99 = s.value("latency_p99_us", std::int64_t(0)),
             max = s.value("latency_max_us", std::int64_t(0));
  EXPECT_GE(p50, 2000) << s.dump();
  EXPECT_LT(p50, 300000) << s.dump();
  EXPECT_GE(max, 300000) << s.dump();
  EXPECT_LT(max, 900000) << "the first second's message is not counted: " << s.dump();
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, max);
}

}  // namespace
}  // namespace dde::test
