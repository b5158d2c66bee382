// A pool's figures without a router: counters as describe shows them, and the queue and handling
// histograms behind describe's latency (and /metrics).
#include <gtest/gtest.h>

#include "pool_figures.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

TEST(PoolFigures, StatsShowEachCounterAndTheMessagesWorkersSent) {
  pool_figures figures("unit.figures-stats");
  figures.count().delivered = 3;
  figures.count().acked = 2;
  figures.sent();
  figures.sent();
  auto stats = figures.stats();
  EXPECT_EQ(stats["delivered"], 3);
  EXPECT_EQ(stats["acked"], 2);
  EXPECT_EQ(stats["sent"], 2);
  EXPECT_EQ(stats["failed"], 0);
}

TEST(PoolFigures, LatencyAppearsOnceAMessageWasTimedAndAStampFromTheFutureCountsAsNoWait) {
  pool_figures figures("unit.figures-latency");
  EXPECT_TRUE(figures.latency().empty());
  auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1'790'000'000));
  auto us = [](std::chrono::system_clock::time_point t) {
    return std::uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
  };
  figures.queued(us(now - 3ms), now);
  figures.queued(us(now + 10s), now);  // the publisher's clock runs ahead
  figures.handled(20ms);
  auto latency = figures.latency();
  EXPECT_EQ(latency["queueMs"]["count"], 2);
  EXPECT_LE(latency["queueMs"]["p99"].get<double>(), 5.0) << latency.dump();
  EXPECT_EQ(latency["handlingMs"]["count"], 1);
  EXPECT_GT(latency["handlingMs"]["p50"].get<double>(), 10.0) << latency.dump();
  EXPECT_LE(latency["handlingMs"]["p50"].get<double>(), 25.0) << latency.dump();
}

}  // namespace
}  // namespace dde::host
