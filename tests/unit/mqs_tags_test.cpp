// The MQS's tag bookkeeping towards the broker: acks batched with `multiple`, publisher confirms.
#include <gtest/gtest.h>

#include "ack_batcher.hpp"
#include "confirm_tracker.hpp"

namespace dde::mqs {
namespace {

struct sent {
  std::string what;  // "ack", "ack+", "requeue", "drop"
  std::uint64_t tag;
  bool operator==(const sent&) const = default;
};

std::ostream& operator<<(std::ostream& os, const sent& s) { return os << s.what << ":" << s.tag; }

class recording_sink : public ack_sink {
 public:
  void send_ack(std::uint16_t, std::uint64_t tag, bool multiple) override {
    out.push_back({multiple ? "ack+" : "ack", tag});
  }
  void send_reject(std::uint16_t, std::uint64_t tag, bool requeue) override {
    out.push_back({requeue ? "requeue" : "drop", tag});
  }
  std::vector<sent> out;
};

TEST(AckBatcher, ContiguousAcksFromTheOldestBecomeOneMultipleAck) {
  ack_batcher b(1);
  recording_sink s;
  for (std::uint64_t t = 1; t <= 5; ++t) b.delivered(t);
  for (std::uint64_t t = 1; t <= 4; ++t) b.ack(t);
  b.flush(s);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack+", 4}}));
  EXPECT_EQ(b.outstanding(), 1u);
}

TEST(AckBatcher, AnAckBehindAnOpenDeliveryIsSentAlone) {
  ack_batcher b(1);
  recording_sink s;
  for (std::uint64_t t = 1; t <= 3; ++t) b.delivered(t);
  b.ack(3);
  b.flush(s);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack", 3}}));
  s.out.clear();
  b.ack(1);
  b.ack(2);
  b.flush(s);
  // 3 was already acked alone; the multiple ack up to 2 must not name it again.
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack+", 2}}));
  EXPECT_EQ(b.outstanding(), 0u);
}

TEST(AckBatcher, RejectsGoBeforeAMultipleAckThatWouldCoverThem) {
  ack_batcher b(1);
  recording_sink s;
  for (std::uint64_t t = 10; t <= 13; ++t) b.delivered(t);
  b.ack(10);
  b.reject(11, true);
  b.ack(12);
  b.reject(13, false);
  b.flush(s);
  EXPECT_EQ(s.out, (std::vector<sent>{{"requeue", 11}, {"drop", 13}, {"ack+", 12}}));
}

TEST(AckBatcher, SettlingATagTwiceOrAnUnknownTagSendsNothing) {
  ack_batcher b(1);
  recording_sink s;
  b.delivered(1);
  b.ack(1);
  b.ack(1);
  b.reject(1, true);
  b.ack(99);
  b.flush(s);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack+", 1}}));
  s.out.clear();
  b.flush(s);
  EXPECT_TRUE(s.out.empty());
}

TEST(AckBatcher, EachConsumerOfTheChannelCountsWhatItsHostsHaveNotSettled) {
  ack_batcher b(1);
  recording_sink s;
  b.delivered(1, 0);
  b.delivered(2, 3);
  b.delivered(3, 3);
  b.delivered(4, 0);
  EXPECT_EQ(b.held_by(0), 2u);
  EXPECT_EQ(b.held_by(3), 2u);
  EXPECT_EQ(b.held_by(7), 0u) << "a consumer that got nothing";
  b.ack(2);
  b.reject(4, true);
  b.ack(2);  // settled once only
  EXPECT_EQ(b.held_by(0), 1u);
  EXPECT_EQ(b.held_by(3), 1u);
  b.flush(s);  // sending what was settled does not change what is held
  EXPECT_EQ(b.held_by(0), 1u);
  EXPECT_EQ(b.held_by(3), 1u);
  b.ack(1);
  b.ack(3);
  EXPECT_EQ(b.held_by(0), 0u);
  EXPECT_EQ(b.held_by(3), 0u);
  EXPECT_EQ(b.outstanding(), 0u);
}

/// A channel whose acks may wait 1 ms behind an open delivery, with deliveries 1 to `n`.
class HeldAcks : public ::testing::Test {
 protected:
  void deliver(std::uint64_t n) {
    for (std::uint64_t t = 1; t <= n; ++t) b.delivered(t);
  }
  ack_batcher b{1, std::chrono::milliseconds(1)};
  recording_sink s;
  const ack_batcher::clock::time_point t0{std::chrono::hours(1)};
};

TEST_F(HeldAcks, AHeldAckBehindAnOpenDeliveryGoesInTheMultipleAckThatClosesTheGap) {
  using namespace std::chrono_literals;
  deliver(8);
  // Four consumers share the channel; tags 2-4 and 6-8 are settled before 1 and 5.
  for (std::uint64_t t : {2, 3, 4, 6, 7, 8}) b.ack(t, t0);
  b.flush(s, t0);
  EXPECT_TRUE(s.out.empty()) << "held while within the hold";
  EXPECT_EQ(b.due(), t0 + 1ms);
  b.ack(1, t0 + 500us);
  b.flush(s, t0 + 500us);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack+", 4}})) << "one frame for 1-4";
  b.ack(5, t0 + 600us);
  b.flush(s, t0 + 600us);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack+", 4}, {"ack+", 8}}));
  EXPECT_FALSE(b.due());
  EXPECT_EQ(b.outstanding(), 0u);
}

TEST_F(HeldAcks, AHeldAckGoesAloneOnceItsHoldIsOverAndEveryHeldAckGoesAtAFullFlush) {
  using namespace std::chrono_literals;
  deliver(4);
  b.ack(2, t0);
  b.ack(3, t0 + 400us);
  b.flush(s, t0 + 999us);
  EXPECT_TRUE(s.out.empty());
  b.flush(s, t0 + 1ms);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack", 2}}))
      << "a slow delivery ahead keeps it no longer than the hold";
  EXPECT_EQ(b.due(), t0 + 1400us);
  b.ack(4, t0 + 1100us);
  b.flush(s);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack", 2}, {"ack", 3}, {"ack", 4}})) << "before a channel closes";
  EXPECT_FALSE(b.due());
  b.ack(1, t0 + 2ms);
  b.flush(s, t0 + 2ms);
  EXPECT_EQ(s.out.back(), (sent{"ack+", 1})) << "the multiple ack names none of those sent alone again";
}

TEST(AckBatcher, WithoutAHoldAnAckBehindAnOpenDeliveryIsNeverHeld) {
  const ack_batcher::clock::time_point t0{std::chrono::hours(1)};
  ack_batcher b(1);  // an at-most-once topic's channel
  recording_sink s;
  for (std::uint64_t t = 1; t <= 3; ++t) b.delivered(t);
  b.ack(2, t0);
  b.flush(s, t0);
  EXPECT_EQ(s.out, (std::vector<sent>{{"ack", 2}}));
  EXPECT_FALSE(b.due());
}

TEST(ConfirmTracker, TagsCountFromOneAndAMultipleAckSettlesEverythingUpToIt) {
  confirm_tracker<int> t;
  EXPECT_EQ(t.published(100), 1u);
  EXPECT_EQ(t.published(200), 2u);
  EXPECT_EQ(t.published(300), 3u);
  std::vector<int> out;
  t.settle(2, true, out);
  EXPECT_EQ(out, (std::vector<int>{100, 200}));
  EXPECT_EQ(t.size(), 1u);
}

TEST(ConfirmTracker, SingleAcksMaySettleOutOfOrder) {
  confirm_tracker<int> t;
  for (int i = 1; i <= 4; ++i) t.published(i);
  std::vector<int> out;
  t.settle(3, false, out);
  t.settle(1, false, out);
  EXPECT_EQ(out, (std::vector<int>{3, 1}));
  out.clear();
  t.settle(4, true, out);
  EXPECT_EQ(out, (std::vector<int>{2, 4}));
  EXPECT_EQ(t.size(), 0u);
  t.settle(4, false, out);  // unknown now: ignored
  EXPECT_EQ(out.size(), 2u);
}

TEST(ConfirmTracker, ResetReturnsWhatWasUnconfirmedInOrderAndRestartsNumbering) {
  confirm_tracker<std::string> t;
  t.published("a");
  t.published("b");
  t.published("c");
  std::vector<std::string> out;
  t.settle(2, false, out);
  EXPECT_EQ(t.reset(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.published("d"), 1u);
}

}  // namespace
}  // namespace dde::mqs
