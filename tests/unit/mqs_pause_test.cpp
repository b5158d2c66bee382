// Pool-wide pauses in the MQS: who is told (pause_board) and the broadcast between MQS processes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "pause_board.hpp"
#include "pause_broadcast.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

std::vector<client_id> clients_of(const std::vector<pause_notice>& notices) {
  std::vector<client_id> out;
  for (auto& n : notices) out.push_back(n.client);
  return out;
}

class PauseBoard : public ::testing::Test {
 protected:
  pause_board board;
  pause_board::clock::time_point t0 = pause_board::clock::now();
  std::vector<pause_notice> out;
};

TEST_F(PauseBoard, APauseIsToldToEveryHostPullingItsTopicAndNoOther) {
  board.listen(1, "s.t", t0, out);
  board.listen(2, "s.t", t0, out);
  board.listen(3, "s.other", t0, out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(board.pause("s.t", 2000ms, "429", "m/h", t0, out));
  EXPECT_EQ(clients_of(out), (std::vector<client_id>{1, 2}));
  for (auto& n : out) {
    EXPECT_EQ(n.topic, "s.t");
    EXPECT_EQ(n.remaining, 2000ms);
    EXPECT_EQ(n.reason, "429");
    EXPECT_EQ(n.origin, "m/h");
  }
}

TEST_F(PauseBoard, AHostThatCancelledOrLeftIsNotToldAndPullingAgainDoesNotRepeatIt) {
  board.listen(1, "s.t", t0, out);
  board.listen(2, "s.t", t0, out);
  board.listen(3, "s.t", t0, out);
  board.stop_listening(1, "s.t");
  board.forget(2);
  board.pause("s.t", 1000ms, "", "o", t0, out);
  EXPECT_EQ(clients_of(out), (std::vector<client_id>{3}));
  out.clear();
  board.listen(3, "s.t", t0 + 10ms, out);  // more credit: it heard of the pause already
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(board.listeners("s.t"), 1u);
}

TEST_F(PauseBoard, AHostThatStartsPullingAPausedTopicHearsTheTimeLeft) {
  board.pause("s.t", 1000ms, "why", "o", t0, out);
  EXPECT_TRUE(out.empty());
  board.listen(7, "s.t", t0 + 300ms, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].client, 7u);
  EXPECT_EQ(out[0].remaining, 700ms);
  EXPECT_EQ(out[0].reason, "why");
  out.clear();
  board.listen(8, "s.t", t0 + 1000ms, out);  // over
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(board.remembered(), 0u);
}

TEST_F(PauseBoard, APauseEndingNoLaterThanARunningOneIsNotToldAgainButALongerOneIs) {
  board.listen(1, "s.t", t0, out);
  EXPECT_TRUE(board.pause("s.t", 1000ms, "first", "o", t0, out));
  out.clear();
  EXPECT_FALSE(board.pause("s.t", 500ms, "shorter", "o", t0 + 100ms, out));
  EXPECT_FALSE(board.pause("s.t", 900ms, "same end", "o", t0 + 100ms, out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(board.pause("s.t", 1000ms, "longer", "o2", t0 + 100ms, out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, "longer");
  out.clear();
  board.listen(2, "s.t", t0 + 600ms, out);  // hears of the one that ends last
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].remaining, 500ms);
  EXPECT_EQ(out[0].origin, "o2");
}

TEST_F(PauseBoard, RemembersAtMostItsLimitButStillTellsThoseWhoPull) {
  pause_board small(2);
  small.pause("s.a", 100ms, "", "o", t0, out);
  small.pause("s.b", 100ms, "", "o", t0, out);
  small.listen(1, "s.c", t0, out);
  EXPECT_TRUE(small.pause("s.c", 100ms, "", "o", t0, out));
  EXPECT_EQ(clients_of(out), (std::vector<client_id>{1}));
  EXPECT_EQ(small.remembered(), 2u);
  // Once the others are over they make room.
  EXPECT_TRUE(small.pause("s.d", 100ms, "", "o", t0 + 200ms, out));
  EXPECT_EQ(small.remembered(), 1u);
}

pause_broadcast sample() {
  return pause_broadcast{"s.t", 2000, 1'700'000'002'000, "429 from api", "mqs-a/host-1", "mqs-a"};
}

TEST(PauseBroadcast, RoundTripsThroughItsJsonBody) {
  auto body = encode_pause_broadcast(sample());
  auto j = json::parse(body);
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["deadline"], 1'700'000'002'000);
  auto d = decode_pause_broadcast(body);
  ASSERT_TRUE(d.pause) << d.error;
  EXPECT_EQ(d.pause->topic, "s.t");
  EXPECT_EQ(d.pause->ms, 2000);
  EXPECT_EQ(d.pause->deadline_ms, 1'700'000'002'000);
  EXPECT_EQ(d.pause->reason, "429 from api");
  EXPECT_EQ(d.pause->origin, "mqs-a/host-1");
  EXPECT_EQ(d.pause->mqs, "mqs-a");
}

TEST(PauseBroadcast, BodiesThatAreNotValidPausesAreRefusedWithAReason) {
  EXPECT_FALSE(decode_pause_broadcast("not json").pause);
  EXPECT_FALSE(decode_pause_broadcast("[1]").pause);
  auto j = json::parse(encode_pause_broadcast(sample()));
  auto without = [&](const char* key, json value = nullptr) {
    auto k = j;
    if (value.is_null())
      k.erase(key);
    else
      k[key] = value;
    return decode_pause_broadcast(k.dump());
  };
  EXPECT_FALSE(without("v", 2).pause);
  EXPECT_FALSE(without("topic").pause);
  EXPECT_FALSE(without("topic", "../x").pause);
  EXPECT_FALSE(without("ms", 0).pause);
  EXPECT_FALSE(without("ms", 3600001).pause);
  EXPECT_FALSE(without("deadline", "soon").pause);
  EXPECT_FALSE(without("reason", std::string(1001, 'r')).pause);
  EXPECT_FALSE(without("origin").pause);
  EXPECT_NE(without("ms", 0).error, "");
}

TEST(PauseBroadcast, TheTimeLeftIsToTheDeadlineCappedAtMsAndTheFullMsWhenTheDeadlineIsPast) {
  auto p = sample();                                        // deadline 1'700'000'002'000, ms 2000
  EXPECT_EQ(remaining_time(p, 1'700'000'000'000), 2000ms);  // sent just now
  EXPECT_EQ(remaining_time(p, 1'700'000'000'150), 1850ms);  // 150 ms in transit
  EXPECT_EQ(remaining_time(p, 1'699'999'990'000), 2000ms);  // our clock is behind theirs: capped
  EXPECT_EQ(remaining_time(p, 1'700'000'002'000), 2000ms);  // past: the clocks disagree, use ms
  EXPECT_EQ(remaining_time(p, 1'700'000'100'000), 2000ms);
  p.deadline_ms = std::numeric_limits<std::int64_t>::max();  // hostile: still capped
  EXPECT_EQ(remaining_time(p, 1'700'000'000'000), 2000ms);
}

}  // namespace
}  // namespace dde::mqs
