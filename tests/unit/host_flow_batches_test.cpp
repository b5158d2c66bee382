// The batches of a router's message flow without a router: done reports from several threads taken
// in bursts, and a delivery batch gathered per worker.
#include <gtest/gtest.h>

#include <thread>

#include "flow_batches.hpp"

namespace dde::host {
namespace {

TEST(DoneReports, OnlyTheFirstReportOfABurstAsksForAHopAndAllAreFinishedInOrder) {
  done_reports reports;
  EXPECT_TRUE(reports.add(0, 1));
  EXPECT_FALSE(reports.add(1, 2));
  EXPECT_FALSE(reports.add(0, 3));
  std::vector<std::pair<std::size_t, std::uint64_t>> finished;
  bool finishing_seen = true;
  reports.finish_all([&](std::size_t index, std::uint64_t id) {
    finishing_seen = finishing_seen && reports.finishing();
    finished.emplace_back(index, id);
  });
  EXPECT_TRUE(finishing_seen);
  EXPECT_FALSE(reports.finishing());
  EXPECT_EQ(finished, (std::vector<std::pair<std::size_t, std::uint64_t>>{{0, 1}, {1, 2}, {0, 3}}));
  EXPECT_TRUE(reports.add(2, 4)) << "the next burst asks for its own hop";
}

TEST(DoneReports, ReportsFromManyThreadsAreEachFinishedOnceWithOneHopPerBurst) {
  done_reports reports;
  constexpr int threads = 4, each = 5000;
  std::atomic<int> hops{0};
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < each; ++i)
        if (reports.add(std::size_t(t), std::uint64_t(i))) hops.fetch_add(1);
    });
  std::vector<int> seen(threads, 0);
  int bursts = 0;
  auto take = [&] {
    reports.finish_all([&](std::size_t index, std::uint64_t) { ++seen[index]; });
    ++bursts;
  };
  while (hops.load() > bursts) take();
  for (auto& w : workers) w.join();
  while (hops.load() > bursts) take();
  EXPECT_EQ(seen, std::vector<int>(threads, each));
}

TEST(HandOver, GathersEachWorkersShareAndPostsItInSlotOrderOncePerBatch) {
  hand_over batch;
  EXPECT_FALSE(batch.gathering());
  batch.begin();
  EXPECT_TRUE(batch.gathering());
  batch.add(2, message(), 11);
  batch.add(0, message(), 12);
  batch.add(2, message(), 13);
  std::vector<std::pair<std::size_t, std::vector<std::uint64_t>>> posted;
  auto post = [&](std::size_t index, std::vector<hand_over::posting>&& postings) {
    std::vector<std::uint64_t> ids;
    ids.reserve(postings.size());
    for (auto& [m, id] : postings) ids.push_back(id);
    posted.emplace_back(index, ids);
  };
  batch.end(post);
  EXPECT_FALSE(batch.gathering());
  EXPECT_EQ(posted,
            (std::vector<std::pair<std::size_t, std::vector<std::uint64_t>>>{{0, {12}}, {2, {11, 13}}}));

  posted.clear();
  batch.begin();
  batch.add(1, message(), 14);
  batch.end(post);
  EXPECT_EQ(posted, (std::vector<std::pair<std::size_t, std::vector<std::uint64_t>>>{{1, {14}}}))
      << "nothing of the batch before is posted again";
}

}  // namespace
}  // namespace dde::host
