// First-reply-wins races without a router: a fake pool records the copies handed out and the acks,
// a manual clock runs the tail-chopping delays.
#include <gtest/gtest.h>

#include "dde/envelope.hpp"
#include "first_reply.hpp"
#include "manual_clock.hpp"
#include "routing.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

struct racing_pool : race_pool {
  std::size_t slots = 3;
  std::vector<bool> room = std::vector<bool>(3, true);
  std::vector<std::pair<std::uint64_t, std::size_t>> copies;  ///< (delivery, worker)
  std::vector<std::uint64_t> acked;
  std::size_t slot_count() const override { return slots; }
  std::size_t other_worker(const std::vector<std::size_t>& asked) override {
    for (std::size_t i = 0; i < slots; ++i)
      if (room[i] && std::find(asked.begin(), asked.end(), i) == asked.end()) return i;
    return pool_ledger::npos;
  }
  void hand_copy(std::uint64_t delivery_id, std::size_t index, message) override {
    copies.emplace_back(delivery_id, index);
  }
  void ack_answered(std::uint64_t delivery_id) override { acked.push_back(delivery_id); }
  bool stopping() const override { return false; }
};

pool_spec spec_of(const std::string& router) {
  auto s = parse_pool_spec({{"isolateSystemName", "unit"},
                            {"isolateName", "race"},
                            {"uri", "/nowhere/libx.so"},
                            {"workersPaths", {"localhost", "localhost", "localhost"}},
                            {"routerType", router},
                            {"tailChopDelayMs", 100}});
  EXPECT_TRUE(s) << s.error();
  return s.value();
}

message with_id(const std::string& id) {
  return to_message(decode_envelope(R"({"id":")" + id + R"(","from":"unit/src","body":{}})"), false);
}

struct FirstReply : ::testing::Test {
  testing::manual_time t;
  racing_pool pool;
  ~FirstReply() override { t.clock->clear(); }
};

TEST_F(FirstReply, TailChoppingHandsOneMoreCopyEachDelayUntilEveryWorkerHasOne) {
  auto spec = spec_of("tailChopping");
  first_reply races(*t.clock, t.strand, spec, pool);
  races.open(7, with_id("m7"), {0});
  ASSERT_TRUE(races.raced(7));
  t.advance(99ms);
  EXPECT_TRUE(pool.copies.empty());
  t.advance(1ms);
  EXPECT_EQ(pool.copies, (std::vector<std::pair<std::uint64_t, std::size_t>>{{7, 1}}));
  pool.room[2] = false;
  t.advance(100ms);
  EXPECT_EQ(pool.copies.size(), 1u) << "no worker with room: it waits for the next delay";
  pool.room[2] = true;
  t.advance(100ms);
  t.advance(100ms);
  EXPECT_EQ(pool.copies, (std::vector<std::pair<std::uint64_t, std::size_t>>{{7, 1}, {7, 2}}));
  auto counts = races.counts();
  EXPECT_EQ(counts.copies, 3u);
  EXPECT_EQ(counts.chopped, 2u);
}

TEST_F(FirstReply, ACopyThatFailsBeforeAnyAnswerIsChoppedAtOnceAndAnAnswerStopsTheChops) {
  auto spec = spec_of("tailChopping");
  first_reply races(*t.clock, t.strand, spec, pool);
  races.open(1, with_id("m1"), {0});
  races.copy_ended(1, true);
  EXPECT_EQ(pool.copies, (std::vector<std::pair<std::uint64_t, std::size_t>>{{1, 1}}));
  EXPECT_TRUE(races.claim("m1"));
  races.copy_ended(1, false);
  EXPECT_EQ(pool.acked, std::vector<std::uint64_t>{1});
  t.advance(500ms);
  EXPECT_EQ(pool.copies.size(), 1u) << "answered: no more copies";
  auto outcome = races.close(1);
  EXPECT_FALSE(outcome.failed);
  EXPECT_TRUE(outcome.acked);
  EXPECT_FALSE(races.raced(1));
}

TEST_F(FirstReply, TheFirstReplyWinsLaterOnesAreDroppedAndAMessageEveryCopyFailedFails) {
  auto spec = spec_of("scatterGather");
  first_reply races(*t.clock, t.strand, spec, pool);
  races.open(3, with_id("m3"), {0, 1, 2});
  EXPECT_TRUE(races.claim("m3"));
  EXPECT_FALSE(races.claim("m3"));
  EXPECT_TRUE(races.claim("another")) << "a message not raced is not refused";
  races.copy_ended(3, false);
  races.copy_ended(3, false);
  EXPECT_EQ(pool.acked, std::vector<std::uint64_t>{3}) << "acked once";
  races.copy_ended(3, true);
  EXPECT_TRUE(races.close(3).acked);
  auto counts = races.counts();
  EXPECT_EQ(counts.answered, 1u);
  EXPECT_EQ(counts.dropped, 1u);
  EXPECT_EQ(counts.copies, 3u);

  races.open(4, with_id("m4"), {0, 1});
  races.copy_ended(4, true);
  races.copy_ended(4, true);
  auto failed = races.close(4);
  EXPECT_TRUE(failed.failed);
  EXPECT_FALSE(failed.acked);
  t.advance(1000ms);
  EXPECT_TRUE(pool.copies.empty()) << "scatter-gather hands no extra copies";
}

TEST_F(FirstReply, APoolThatDoesNotRaceOrAMessageWithoutAnIdIsNotRaced) {
  auto spec = spec_of("roundRobin");
  first_reply races(*t.clock, t.strand, spec, pool);
  races.open(1, with_id("m1"), {0});
  EXPECT_FALSE(races.raced(1));
  EXPECT_TRUE(races.claim("m1"));
  EXPECT_TRUE(races.claim("m1"));
  auto scatter = spec_of("scatterGather");
  first_reply raced(*t.clock, t.strand, scatter, pool);
  raced.open(2, message(), {0, 1});
  EXPECT_FALSE(raced.raced(2));
}

}  // namespace
}  // namespace dde::host
