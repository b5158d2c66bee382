// The dequeuer without a broker or a thread: its loop turns driven by the test over a fake broker
// and a clock the test moves (a connection per topic, credit, acks with `multiple`, a topic's lost
// connection and the consume that follows, broker cancels, one broker consumer per worker).
#include <gtest/gtest.h>

#include <tuple>

#include "dde/core/metrics.hpp"
#include "dequeuer.hpp"
#include "fake_amqp_session.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using namespace testing;  // the fake broker, session and clock, recording_connection, topic

struct delivery {
  std::uint64_t tag = 0;  ///< the MQS's tag, which the host acks
  std::string body;
  bool redelivered = false;
  std::uint64_t published_us = 0;
  std::vector<std::pair<std::string, std::string>> headers;
};

class DequeuerTest : public ::testing::Test {
 protected:
  DequeuerTest() { cfg.prefetch = 8; }

  /// With `published`, the MQS's own messages (lease copies) are kept there rather than refused.
  dequeuer& start(std::vector<outgoing_message>* published = nullptr) {
    deq = std::make_unique<dequeuer>(cfg, "mqs-test", broker_env{broker.opener(), time.fn()});
    if (published)
      deq->set_publisher([published](std::vector<outgoing_message>&& out) {
        for (auto& m : out) published->push_back(std::move(m));
      });
    settle();
    return *deq;
  }
  /// Turns the loop until nothing is left to read (the fake's frames are all handled).
  void settle() {
    for (int i = 0; i < 100; ++i) {
      if (!deq->turn()) ADD_FAILURE() << "the dequeuer stopped";
      bool more = false;
      for (auto* s : broker.live) more = more || s->buffered();
      if (!more) return;
    }
    ADD_FAILURE() << "frames left unread";
  }
  void command(dequeue_command cmd) {
    deq->submit({std::move(cmd)});
    settle();
  }
  void pull(std::uint32_t credit, std::uint32_t consumers = 1,
            delivery_mode mode = delivery_mode::at_least_once, const std::string& of = topic) {
    command(dequeue::pull{host, of, mode, credit, consumers});
  }
  void ack(std::vector<std::uint64_t> tags) { command(dequeue::ack{host, std::move(tags)}); }
  /// The topic's consuming connection.
  fake_session* link() { return broker.find(std::string(" ") + topic); }
  /// `wait` later, the topic is consumed on a link whose delivery reaches the host.
  void expect_consuming_after(std::chrono::milliseconds wait, const char* why) {
    time.advance(wait);
    settle();
    auto* s = link();
    ASSERT_NE(s, nullptr) << why;
    s->deliver(1, consumer_tag(*s), 1, "again");
    settle();
    EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"again"})) << why;
  }
  fake_session* main_link() { return broker.find("dequeuer"); }
  /// The consumer tag of the topic's first consumer on `s`.
  static std::string consumer_tag(const fake_session& s) {
    for (auto& r : s.rpcs)
      if (r.rfind("basic.consume 1 s.consumer ", 0) == 0)
        return r.substr(std::strlen("basic.consume 1 s.consumer "));
    return {};
  }
  std::vector<delivery> deliveries() {
    std::vector<delivery> out;
    for (auto& [record, body] : mqs_records(*host)) {
      if (auto* d = std::get_if<deliver_record>(&record))
        out.push_back({d->tag, body, d->redelivered, d->published_us, d->props.headers});
      else
        ADD_FAILURE() << "a record other than a delivery";
    }
    return out;
  }
  static std::vector<std::string> bodies(const std::vector<delivery>& ds) {
    std::vector<std::string> out;
    out.reserve(ds.size());
    for (auto& d : ds) out.push_back(d.body);
    return out;
  }

  fake_time time;
  fake_broker broker;
  config cfg;
  std::shared_ptr<recording_connection> host = std::make_shared<recording_connection>(3);
  std::unique_ptr<dequeuer> deq;
};

TEST_F(DequeuerTest, TheMainConnectionConsumesPausesAndAPullConsumesItsTopicOnAConnectionOfItsOwn) {
  start();
  ASSERT_NE(main_link(), nullptr);
  EXPECT_EQ(main_link()->count("exchange.declare"), 1u);
  EXPECT_EQ(main_link()->count("basic.consume"), 1u) << "the pause consumer";
  EXPECT_EQ(link(), nullptr) << "no topic is consumed before a host pulls";

  pull(2);
  auto* s = link();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->name, "dde-mqs dequeuer s.consumer");
  std::vector<std::string> expected{"channel.open 1", "queue.declare 1 dde.dead.s.consumer",
                                    "queue.declare 1 s.consumer", "basic.qos 1 8"};
  ASSERT_GE(s->rpcs.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(s->rpcs.begin(), s->rpcs.begin() + 4), expected);
  EXPECT_FALSE(consumer_tag(*s).empty());
  EXPECT_EQ(main_link()->count("basic.consume"), 1u) << "topics stay off the main connection";
}

TEST_F(DequeuerTest, AHostGetsNoMoreThanItsCreditAndTheRestWaitsForMore) {
  start();
  pull(2);
  auto& s = *link();
  auto tag = consumer_tag(s);
  s.deliver(1, tag, 1, "a", false, "id-a");
  s.deliver(1, tag, 2, "b");
  s.deliver(1, tag, 3, "c");
  settle();
  auto got = deliveries();
  EXPECT_EQ(bodies(got), (std::vector<std::string>{"a", "b"}));
  pull(1);
  EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"c"}));
}

TEST_F(DequeuerTest, ThePublishStampOfAMessageReachesItsHost) {
  start();
  pull(2);
  auto& s = *link();
  auto tag = consumer_tag(s);
  s.deliver(1, tag, 1, "a", false, "id-a", 1'790'000'000'123'456);
  s.deliver(1, tag, 2, "b");
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].published_us, 1'790'000'000'123'456u);
  EXPECT_EQ(got[1].published_us, 0u) << "no stamp (not published by an MQS): none reported";
}

TEST_F(DequeuerTest, ACopyTheMqsPublishedAgainReachesItsHostFlaggedRedeliveredWithoutTheMark) {
  start();
  pull(5);
  // (delivery tag, body, broker's redelivered flag, message id, the MQS's resent mark)
  const std::vector<std::tuple<std::uint64_t, std::string, bool, std::string, bool>> sent{
      {1, "first copy", false, "id-a", false},
      {2, "second copy", false, "id-a", true},
      {3, "redelivered by the broker", true, "id-b", true},
      {4, "a first copy after its second", false, "id-b", false},
      {5, "another message", false, "id-c", false}};
  for (auto& [delivery_tag, body, redelivered, id, resent] : sent)
    link()->deliver(1, consumer_tag(*link()), delivery_tag, body, redelivered, id, 0, {}, resent);
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 5u);
  EXPECT_FALSE(got[0].redelivered);
  EXPECT_TRUE(got[1].redelivered) << "the broker may hold two copies: the second is flagged";
  EXPECT_TRUE(got[2].redelivered);
  EXPECT_TRUE(got[3].redelivered) << "a frozen node can store the first copy after the resent one";
  EXPECT_FALSE(got[4].redelivered);
  for (auto& d : got) EXPECT_TRUE(d.headers.empty()) << d.body << ": the mark is the MQS's own";
}

TEST_F(DequeuerTest, APoolsCountersAreThereAtZeroFromItsFirstPullEvenBeforeItIsConsumed) {
  start();
  broker.refuse_open = "connection refused";  // the topic's own connection cannot open: no consumer yet
  pull(1, 1, delivery_mode::at_least_once, "fresh.pool");
  auto text = metrics_registry::process().render();
  for (auto name : {"dde_mqs_published_total", "dde_mqs_consumed_total", "dde_mqs_acked_total",
                    "dde_mqs_redelivered_total"})
    EXPECT_NE(text.find(std::string(name) + "{pool=\"fresh.pool\"} 0\n"), std::string::npos) << name << "\n"
                                                                                             << text;
}

TEST_F(DequeuerTest, TheHostsAcksReachTheBrokerAsOneAckWithMultiple) {
  start();
  pull(3);
  auto& s = *link();
  auto tag = consumer_tag(s);
  for (std::uint64_t t = 1; t <= 3; ++t) s.deliver(1, tag, t, "m" + std::to_string(t));
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_TRUE(s.acks.empty()) << "nothing is acked before the host is done";
  ack({got[0].tag, got[1].tag, got[2].tag});
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 3, true}}));
}

TEST_F(DequeuerTest, AnAtMostOnceDeliveryIsAckedToTheBrokerInTheTurnItIsHandedOver) {
  start();
  pull(8, 1, delivery_mode::at_most_once);
  auto& s = *link();
  s.deliver(1, consumer_tag(s), 1, "m1");
  settle();
  ASSERT_EQ(deliveries().size(), 1u);
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 1, true}}))
      << "a hand-over's ack is never held back: the broker would deliver it again if the MQS died";
}

TEST_F(DequeuerTest,
       AtLeastOnceAcksOfConsumersThatFinishOutOfOrderGoAsOneMultipleAckOrAloneAfterAMillisecond) {
  start();
  pull(8, 2);  // two workers: two broker consumers on the topic's channel
  auto& s = *link();
  auto tag = consumer_tag(s);
  for (std::uint64_t t = 1; t <= 4; ++t) s.deliver(1, t % 2 ? tag : tag + "+1", t, "m" + std::to_string(t));
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 4u);
  ack({got[1].tag, got[3].tag});  // the second consumer's host is done first
  EXPECT_TRUE(s.acks.empty()) << "behind delivery 1, still open: held";
  auto wake = deq->turn();
  ASSERT_TRUE(wake);
  EXPECT_LE(*wake, time.now + 1ms) << "the dequeuer comes back when the hold is over";
  ack({got[0].tag, got[2].tag});
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 4, true}})) << "one frame for the four";

  for (std::uint64_t t = 5; t <= 6; ++t) s.deliver(1, t % 2 ? tag : tag + "+1", t, "m" + std::to_string(t));
  settle();
  got = deliveries();
  ASSERT_EQ(got.size(), 2u);
  ack({got[1].tag});
  time.advance(1ms);
  settle();
  EXPECT_EQ(s.acks.back(), (testing::settlement{1, 6, false}))
      << "no longer than the hold behind a slow delivery";
  ack({got[0].tag});
  EXPECT_EQ(s.acks.back(), (testing::settlement{1, 5, true}));
}

TEST_F(DequeuerTest, HeldAcksReachTheBrokerBeforeTheDequeuerStops) {
  start();
  pull(8, 2);
  auto& s = *link();
  auto tag = consumer_tag(s);
  s.deliver(1, tag, 1, "m1");
  s.deliver(1, tag + "+1", 2, "m2");
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 2u);
  ack({got[1].tag});
  ASSERT_TRUE(s.acks.empty());
  deq->stop();  // no thread: marks the last turn
  EXPECT_FALSE(deq->turn()) << "the last turn";
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 2, false}}))
      << "the host's ack is not lost at a stop";
}

TEST_F(DequeuerTest, ALeaseCopyOfAMessageBackFromADeadMqssLeaseQueueNamesThisMqssDeliveryAndStandsForIt) {
  cfg.lease = 1000ms;
  std::vector<outgoing_message> copies;
  start(&copies);
  pull(1);
  auto& s = *link();
  auto tag = consumer_tag(s);
  // The dead MQS's copy, dead-lettered back to the pool's queue, still carries its x-dde-lease.
  s.deliver(1, tag, 1, "job", false, {}, 0, "77");
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 1u);
  for (auto& [key, value] : got[0].headers)
    EXPECT_NE(key, "x-dde-lease") << "the MQS's own mark: the host does not see it";
  time.advance(1000ms);
  settle();
  ASSERT_EQ(copies.size(), 1u) << "held for a lease: copied";
  std::vector<std::string> named;
  for (auto& [key, value] : copies[0].props.headers)
    if (key == "x-dde-lease") named.push_back(value);
  ASSERT_EQ(named.size(), 1u) << "one x-dde-lease header, not the dead MQS's beside ours";
  EXPECT_NE(named[0], "77");

  copies[0].settled(true);  // the broker confirmed the copy
  settle();
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 1, true}})) << "the copy stands for the delivery";
  s.deliver(1, tag + "+lease", 2, "job", false, {}, 0, named[0]);
  settle();
  EXPECT_TRUE(s.rejects.empty())
      << "the copy names a delivery this MQS holds: taken, not sent back to the pool";
  ack({got[0].tag});
  EXPECT_EQ(s.acks.back(), (testing::settlement{1, 2, true})) << "the host's ack settles the copy";
  EXPECT_TRUE(deliveries().empty()) << "the host saw the job once";
}

/// Fixture of the stop tests below: leases of a second, a job delivered and held a lease, its copy
/// published (in `copies`, not yet confirmed); returns the copy's x-dde-lease.
class StoppingDequeuerTest : public DequeuerTest {
 protected:
  std::string held_a_lease(std::uint32_t credit = 1) {
    cfg.lease = 1000ms;
    start(&copies);
    pull(credit);
    tag = consumer_tag(*link());
    link()->deliver(1, tag, 1, "job");
    settle();
    got = deliveries();
    if (got.size() != 1) ADD_FAILURE() << "one delivery";
    time.advance(1000ms);
    settle();
    if (copies.size() != 1) ADD_FAILURE() << "held for a lease: copied";
    for (auto& m : copies)
      for (auto& [key, value] : m.props.headers)
        if (key == "x-dde-lease") return value;
    return {};
  }
  std::vector<outgoing_message> copies;
  std::string tag;
  std::vector<delivery> got;
};

TEST_F(StoppingDequeuerTest, ALeaseCopyOnItsWayIsAwaitedAndTheCopyOfAnAckedJobIsAckedNotLeftToComeBack) {
  auto id = held_a_lease();
  ASSERT_FALSE(id.empty());
  ack({got[0].tag});  // the host's ack while the copy is on its way
  auto& s = *link();
  ASSERT_FALSE(s.acks.empty());
  EXPECT_EQ(s.acks.back().tag, 1u) << "the delivery itself is acked";
  deq->stop();  // no thread: marks the last turns
  auto wake = deq->turn();
  ASSERT_TRUE(wake) << "a copy is on its way: the dequeuer reads on";
  EXPECT_LE(*wake, time.now + 2s);
  s.deliver(1, tag + "+lease", 2, "job", false, {}, 0, id);
  EXPECT_FALSE(deq->turn()) << "the copy came: that was the last turn";
  ASSERT_FALSE(s.acks.empty());
  EXPECT_EQ(s.acks.back().tag, 2u) << "the copy of the acked job is acked before the consumers close";
  EXPECT_TRUE(s.rejects.empty());
}

TEST_F(StoppingDequeuerTest, ACopyThatNeverComesIsAwaitedTwoSecondsAndNothingNewReachesAHostMeanwhile) {
  auto id = held_a_lease(2);
  ASSERT_FALSE(id.empty());
  ack({got[0].tag});
  deq->stop();
  ASSERT_TRUE(deq->turn());
  link()->deliver(1, tag, 3, "next");  // the host still has credit for it
  time.advance(1900ms);
  ASSERT_TRUE(deq->turn()) << "still within the grace";
  EXPECT_TRUE(deliveries().empty())
      << "a stopping MQS hands nothing more to hosts (it goes back to its queue)";
  time.advance(100ms);
  EXPECT_FALSE(deq->turn()) << "two seconds: the consumers close without it";
}

TEST_F(StoppingDequeuerTest, AHeldCopyGoesBackToItsTopicAtOnceNotWhenItsTtlRunsOut) {
  auto id = held_a_lease();
  ASSERT_FALSE(id.empty());
  auto& s = *link();
  copies[0].settled(true);  // confirmed: the copy stands for the delivery
  settle();
  s.deliver(1, tag + "+lease", 2, "job", false, {}, 0, id);
  settle();
  ASSERT_TRUE(s.rejects.empty());
  deq->stop();  // the host still works on the job
  EXPECT_FALSE(deq->turn()) << "no copy on its way: the last turn";
  EXPECT_EQ(s.rejects, (std::vector<testing::settlement>{{1, 2, false}}))
      << "rejected without requeue: the lease queue dead-letters it to the topic now";
}

TEST_F(DequeuerTest, AConsumerThatGetsNothingWhileItsHostWaitsAndItsQueueHoldsMessagesIsConsumedAfresh) {
  cfg.stall_timeout = 10000ms;
  start();
  pull(4);
  auto* first = link();
  first->deliver(1, consumer_tag(*first), 1, "a");
  settle();
  ASSERT_EQ(deliveries().size(), 1u);
  auto& stalls = mqs_metrics::process().topic(topic).stalls;
  const auto stalls_before = stalls.value();
  const auto attempts = broker.attempts.size();

  broker.depth[topic] = 0;  // quiet, but nothing to deliver: idle, not stalled
  time.advance(10000ms);
  settle();
  settle();
  EXPECT_EQ(broker.attempts.size(), attempts + 1) << "the broker was asked, on a connection of its own";
  EXPECT_EQ(link(), first);
  EXPECT_EQ(deq->stall_report(), "");

  broker.depth[topic] = 5;  // messages wait, the host has credit, and nothing comes
  time.advance(10000ms);
  settle();
  settle();
  EXPECT_EQ(link(), nullptr) << "the quiet connection is dropped";
  EXPECT_EQ(stalls.value(), stalls_before + 1);
  EXPECT_EQ(deq->stall_report(), std::string(topic) + " for 20000 ms");
  expect_consuming_after(100ms, "consumed again after the reconnect backoff");
}

TEST_F(DequeuerTest, AConsumerWhosePrefetchIsAllUnacknowledgedIsNotStalledHoweverLongItsJobsTake) {
  cfg.stall_timeout = 10000ms;
  start();
  pull(20);
  auto* s = link();
  for (std::uint64_t tag = 1; tag <= 8; ++tag) s->deliver(1, consumer_tag(*s), tag, "job");  // prefetch 8
  settle();
  ASSERT_EQ(deliveries().size(), 8u);
  broker.depth[topic] = 5;
  const auto attempts = broker.attempts.size();
  time.advance(60000ms);  // the host has credit left, the queue has messages: the jobs are long
  settle();
  settle();
  EXPECT_EQ(broker.attempts.size(), attempts) << "not even asked";
  EXPECT_EQ(link(), s);
  EXPECT_EQ(deq->stall_report(), "");
}

TEST_F(DequeuerTest, ALostTopicConnectionVoidsItsDeliveriesAndTheTopicIsConsumedAgainAfterABackoff) {
  start();
  pull(4);
  auto* first = link();
  auto first_tag = consumer_tag(*first);
  first->deliver(1, first_tag, 1, "a");
  first->deliver(1, first_tag, 2, "b");
  settle();
  auto before = deliveries();
  ASSERT_EQ(before.size(), 2u);
  auto* main = main_link();

  first->drop();
  settle();
  EXPECT_EQ(link(), nullptr) << "the broken connection is closed";
  EXPECT_EQ(main_link(), main) << "the main connection and other topics are not touched";
  ack({before[0].tag});  // void now: the broker gives it back itself
  EXPECT_EQ(broker.attempts.size(), 2u) << "no reconnect before the backoff";

  time.advance(100ms);  // the first backoff is at most 100 ms
  settle();
  auto* second = link();
  ASSERT_NE(second, nullptr);
  auto second_tag = consumer_tag(*second);
  EXPECT_NE(second_tag, first_tag) << "a new consumer";
  second->deliver(1, second_tag, 1, "a", true);
  second->deliver(1, second_tag, 2, "b", true);
  settle();
  auto again = deliveries();
  ASSERT_EQ(again.size(), 2u) << "the credit the host had left, plus what the void deliveries held";
  EXPECT_TRUE(again[0].redelivered);
  ack({before[1].tag});
  EXPECT_TRUE(second->acks.empty()) << "a void tag is never acked on the new connection";
  ack({again[0].tag, again[1].tag});
  EXPECT_EQ(second->acks, (std::vector<testing::settlement>{{1, 2, true}}));
}

TEST_F(DequeuerTest, AConnectionLevelRefusalOfConsumeIsRetriedOnAFreshConnectionNotRefusedToTheHost) {
  start();
  // RabbitMQ 3.10 answers a consume on a quorum queue still electing its leader with 541.
  broker.refuse_next["basic.consume 1 s.consumer"] = {"basic.consume: 541 INTERNAL_ERROR", false, 541};
  pull(1);
  EXPECT_TRUE(mqs_records(*host).empty()) << "the host gets no error";
  EXPECT_EQ(link(), nullptr);
  time.advance(100ms);
  settle();
  auto* s = link();
  ASSERT_NE(s, nullptr);
  s->deliver(1, consumer_tag(*s), 1, "a");
  settle();
  EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"a"}));
}

TEST_F(DequeuerTest, ABrokerThatStaysDownIsTriedAgainAtLeastEveryHalfSecond) {
  broker.refuse_open = "cannot connect to 127.0.0.1:5672: a socket error occurred";
  start();
  ASSERT_EQ(broker.attempts.size(), 1u);
  // However long the broker is down, the delay stops growing at 500 ms (the recovery
  // target of `dde-bench-suite --only 8`).
  for (int i = 0; i < 12; ++i) {
    time.advance(500ms);
    settle();
    ASSERT_EQ(broker.attempts.size(), std::size_t(i + 2)) << "attempt " << i + 2 << " within 500 ms";
  }
  broker.refuse_open.clear();
  time.advance(500ms);
  settle();
  EXPECT_NE(main_link(), nullptr) << "connected once the broker is back";
}

TEST_F(DequeuerTest, ATopicWhoseConsumeIsRefusedAgainAndAgainIsTriedAtLeastEveryHalfSecond) {
  // A quorum queue electing its leader after a broker restart: 541 on basic.consume, for a while.
  const std::string consume = "basic.consume 1 s.consumer";
  const amqp_session::result refused{"basic.consume: 541 INTERNAL_ERROR", false, 541};
  start();
  broker.refuse_next[consume] = refused;
  pull(1);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(broker.refuse_next.count(consume), 0u) << "consume " << i + 1 << " was tried";
    EXPECT_EQ(link(), nullptr);
    broker.refuse_next[consume] = refused;
    time.advance(500ms);
    settle();
  }
  ASSERT_EQ(broker.refuse_next.count(consume), 0u) << "the last refused consume was tried";
  expect_consuming_after(500ms, "consumed within 500 ms of the queue accepting consumers");
}

TEST_F(DequeuerTest, AChannelLevelRefusalOfConsumeIsAnErrorToTheHost) {
  start();
  broker.refuse_next["basic.consume 1 s.consumer"] = {"basic.consume: 403 ACCESS_REFUSED - no read access",
                                                      true, 403};
  pull(1);
  auto got = mqs_records(*host);
  ASSERT_EQ(got.size(), 1u);
  auto* e = std::get_if<error_record>(&got[0].first);
  ASSERT_NE(e, nullptr);
  EXPECT_NE(e->error.find("cannot consume s.consumer"), std::string::npos) << e->error;
  EXPECT_NE(e->error.find("403"), std::string::npos) << e->error;
}

TEST_F(DequeuerTest, AnotherTopicsLinkBeingOpenedHoldsUpNoDeliveryAndNoAck) {
  start();
  pull(2);
  auto& s = *link();
  std::vector<std::function<void()>> openings;  // the opener thread, held by the test
  deq->set_opener([&](std::function<void()> job) { openings.push_back(std::move(job)); });
  pull(1, 1, delivery_mode::at_least_once, "other.pool");
  ASSERT_EQ(openings.size(), 1u);
  EXPECT_EQ(broker.find(" other.pool"), nullptr) << "not opened in the turn";

  s.deliver(1, consumer_tag(s), 1, "a");
  settle();
  auto got = deliveries();
  ASSERT_EQ(bodies(got), (std::vector<std::string>{"a"})) << "delivered while the other link opens";
  ack({got[0].tag});
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 1, true}}));

  pull(1, 1, delivery_mode::at_least_once, "other.pool");
  EXPECT_EQ(openings.size(), 1u) << "one opening a topic at a time";
  openings[0]();  // opened on "its thread": adopted at the next turn
  EXPECT_EQ(openings.size(), 1u);
  settle();
  auto* other = broker.find(" other.pool");
  ASSERT_NE(other, nullptr);
  std::string tag;
  for (auto& r : other->rpcs)
    if (r.rfind("basic.consume 1 other.pool ", 0) == 0)
      tag = r.substr(std::strlen("basic.consume 1 other.pool "));
  ASSERT_FALSE(tag.empty()) << "consuming other.pool";
  other->deliver(1, tag, 1, "b");
  settle();
  EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"b"}));
}

TEST_F(DequeuerTest, ALinkOpenedForATopicNoLongerPulledIsClosedNotConsumed) {
  cfg.idle_timeout = 1000ms;
  start();
  std::vector<std::function<void()>> openings;
  deq->set_opener([&](std::function<void()> job) { openings.push_back(std::move(job)); });
  pull(1);
  ASSERT_EQ(openings.size(), 1u);
  command(dequeue::disconnect{host});
  time.advance(1500ms);  // the topic goes idle: its consumer is stopped while its link opens
  settle();
  openings[0]();
  settle();
  EXPECT_EQ(link(), nullptr) << "the opened connection was closed";
  EXPECT_EQ(broker.attempts.size(), 2u) << "the main connection and that one";
}

TEST_F(DequeuerTest, AnIdleTopicsLinkIsCancelledAndClosedOffTheLoopAfterItsAcks) {
  cfg.idle_timeout = 1000ms;
  start();
  pull(1);
  auto* s = link();
  ASSERT_NE(s, nullptr);
  s->deliver(1, consumer_tag(*s), 1, "a");
  settle();
  auto got = deliveries();
  ASSERT_EQ(got.size(), 1u);
  std::vector<std::function<void()>> closings;
  deq->set_opener([&](std::function<void()> job) { closings.push_back(std::move(job)); });
  ack({got[0].tag});
  command(dequeue::disconnect{host});
  time.advance(1500ms);
  settle();
  ASSERT_EQ(closings.size(), 1u) << "the idle topic's link is handed off to be closed";
  EXPECT_EQ(s->acks, (std::vector<testing::settlement>{{1, 1, true}})) << "its ack went first, from the loop";
  EXPECT_EQ(s->count("basic.cancel"), 0u) << "nothing waited for in the turn";
  ASSERT_EQ(link(), s) << "still open until the job runs";
  closings[0]();
  EXPECT_EQ(link(), nullptr) << "cancelled, closed and gone";
}

TEST_F(DequeuerTest, ARefusalThatComesAfterThePullGoesToEveryHostThatPulledAndALaterPullTriesAgain) {
  start();
  std::vector<std::function<void()>> openings;
  deq->set_opener([&](std::function<void()> job) { openings.push_back(std::move(job)); });
  auto second = std::make_shared<recording_connection>(4);
  pull(1);
  deq->submit({dequeue::pull{second, topic, delivery_mode::at_least_once, 1}});
  settle();
  EXPECT_TRUE(mqs_records(*host).empty()) << "nothing to say before the broker answers";
  broker.refuse_next["basic.consume 1 s.consumer"] = {"basic.consume: 403 ACCESS_REFUSED - no read access",
                                                      true, 403};
  ASSERT_EQ(openings.size(), 1u);
  openings[0]();
  settle();
  for (auto* conn : {host.get(), second.get()}) {
    auto got = mqs_records(*conn);
    ASSERT_EQ(got.size(), 1u);
    auto* e = std::get_if<error_record>(&got[0].first);
    ASSERT_NE(e, nullptr);
    EXPECT_NE(e->error.find("cannot consume s.consumer: basic.consume: 403"), std::string::npos) << e->error;
    EXPECT_EQ(e->header.value("topic", ""), topic);
    EXPECT_EQ(e->header.value("action", ""), "pull");
  }
  EXPECT_EQ(link(), nullptr);
  pull(1);
  ASSERT_EQ(openings.size(), 2u) << "the topic was forgotten: a pull opens it again";
  openings[1]();
  settle();
  EXPECT_NE(link(), nullptr);
}

TEST_F(DequeuerTest, AConsumerTheBrokerCancelledIsConsumedAgainOnAFreshConnectionAfterAboutASecond) {
  start();
  pull(2);
  auto* first = link();
  first->cancel_consumer(1, consumer_tag(*first));
  settle();
  EXPECT_EQ(link(), nullptr) << "consumed again on a fresh connection";
  time.advance(799ms);
  settle();
  EXPECT_EQ(link(), nullptr) << "not before the backoff (1 s, jittered down at most 20%)";
  time.advance(201ms);
  settle();
  auto* second = link();
  ASSERT_NE(second, nullptr);
  second->deliver(1, consumer_tag(*second), 1, "a");
  settle();
  EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"a"}));
}

TEST_F(DequeuerTest, EachWorkerGetsABrokerConsumerAndTheExtrasGoOnceNoDeliveryCameAndNoAckWentForASecond) {
  start();
  pull(4, 3);
  auto& s = *link();
  auto tag = consumer_tag(s);
  EXPECT_EQ(s.count("basic.consume 1 s.consumer " + tag + "+"), 2u) << "one broker consumer per worker";
  s.deliver(1, tag + "+1", 1, "a");
  s.deliver(1, tag + "+2", 2, "b");
  settle();
  auto held = deliveries();
  ASSERT_EQ(held.size(), 2u);

  pull(0, 1);  // the pool scaled down to one worker
  EXPECT_EQ(s.count("basic.cancel"), 0u) << "not while messages flow";
  time.advance(900ms);
  settle();
  ack({held[0].tag});  // makes room: a delivery may be on its way to a consumer
  time.advance(200ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel"), 0u)
      << "not within a second of an ack: what it let out may be in transit";
  time.advance(800ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel 1 " + tag + "+"), 2u);
  EXPECT_EQ(std::count(s.rpcs.begin(), s.rpcs.end(), "basic.cancel 1 " + tag), 0) << "the first one stays";
  ack({held[1].tag});  // held by a cancelled consumer: still settled on the channel
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 1, true}, {1, 2, true}}));
}

TEST_F(DequeuerTest, AnExtraConsumerStaysThroughAStallLongerThanASecondWhileItsQueueStillHoldsMessages) {
  // A loaded broker may stall with a consumer's prefetch on its way: cancelled then, the quorum
  // queue would give those messages back marked redelivered (rabbitmq-server #3729).
  start();
  pull(4, 2);
  auto& s = *link();
  auto tag = consumer_tag(s);
  s.deliver(1, tag + "+1", 1, "a");
  settle();
  auto held = deliveries();
  ASSERT_EQ(held.size(), 1u);
  s.depth[topic] = 500;  // still waiting in the queue
  pull(0, 1);
  time.advance(1500ms);  // no delivery, no ack: quiet, as a stall looks
  settle();
  EXPECT_GE(s.count("queue.declare-passive 1 " + std::string(topic)), 1u) << "the queue is asked first";
  EXPECT_EQ(s.count("basic.cancel"), 0u) << "not while the queue holds messages";
  time.advance(1500ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel"), 0u);

  s.depth[topic] = 0;  // drained
  time.advance(1000ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel 1 " + tag + "+1"), 1u) << "the queue is empty and the channel quiet";
  ack({held[0].tag});
  EXPECT_EQ(s.acks, (std::vector<testing::settlement>{{1, 1, true}}));
}

TEST_F(DequeuerTest, AnExtraConsumerHoldingItsWholePrefetchGoesAfterASecondOfQuietEvenWithMessagesReady) {
  // The broker sends a consumer no more than its prefetch unacked: nothing can be on its way to
  // one that holds all of it.
  cfg.prefetch = 2;
  start();
  pull(6, 3);
  auto& s = *link();
  auto tag = consumer_tag(s);
  s.depth[topic] = 14;
  std::uint64_t t = 0;
  for (const auto& c : {tag + "+1", tag + "+1", tag + "+2", tag + "+2", tag, tag}) s.deliver(1, c, ++t, "m");
  settle();
  auto held = deliveries();
  ASSERT_EQ(held.size(), 6u);
  pull(0, 2);
  time.advance(1100ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel 1 " + tag + "+2"), 1u);
  EXPECT_EQ(s.count("queue.declare-passive"), 0u) << "no need to ask the queue";

  ack({held[0].tag});  // +1 can take one more: something may be on its way to it
  pull(0, 1);
  time.advance(1100ms);
  settle();
  EXPECT_EQ(s.count("basic.cancel 1 " + tag + "+1"), 0u);
  EXPECT_EQ(s.count("queue.declare-passive 1 " + std::string(topic)), 1u);
}

TEST_F(DequeuerTest, AReadingTurnStopsWhereItsSocketIsDrainedWithoutAReadThatFindsNothing) {
  broker.pipes = true;  // the broker's frames wait on a socket of sorts, as a real broker's
  start();
  pull(10, 1, delivery_mode::at_most_once);
  auto* s = link();
  ASSERT_NE(s, nullptr);
  auto tag = consumer_tag(*s);
  for (std::uint64_t t = 1; t <= 3; ++t) s->deliver(1, tag, t, "m" + std::to_string(t));
  auto reads = s->reads, empty = s->empty_reads;
  deq->turn();
  EXPECT_EQ(bodies(deliveries()), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_EQ(s->reads - reads, 9u) << "three deliveries are nine frames";
  // Reading on until the socket says EAGAIN costs every wake-up a read for nothing, and rabbitmq-c
  // a poll behind it.
  EXPECT_EQ(s->empty_reads - empty, 0u) << "the turn read on after the socket was drained";
}

TEST_F(DequeuerTest, ALostMainConnectionIsOpenedAgainAfterABackoffAndConsumesPausesAgain) {
  start();
  auto* main = main_link();
  main->drop();
  settle();
  EXPECT_EQ(main_link(), nullptr);
  time.advance(100ms);
  settle();
  ASSERT_NE(main_link(), nullptr);
  EXPECT_EQ(main_link()->count("basic.consume"), 1u) << "the pause consumer again";
  EXPECT_EQ(broker.attempts, (std::vector<std::string>{"dde-mqs dequeuer", "dde-mqs dequeuer"}));
}

TEST_F(DequeuerTest, AfterABrokerGoneSilentTheMainConnectionIsOpenedAgainOnlyAfterTheNextSweep) {
  // Opening it runs on the loop and may wait for the handshake timeout on a node that accepts
  // connections and answers nothing: the topics' links are read once more first, so that those on
  // the silent node notice it while the loop still runs.
  start();
  main_link()->go_silent();
  settle();
  EXPECT_EQ(main_link(), nullptr);
  time.advance(100ms);
  settle();
  EXPECT_EQ(main_link(), nullptr) << "its backoff is over, but no sweep read every link since";
  time.advance(1s);
  settle();
  ASSERT_NE(main_link(), nullptr);
  EXPECT_EQ(main_link()->count("basic.consume"), 1u) << "the pause consumer again";
}

TEST_F(DequeuerTest, APartitionedTopicConsumesEachPartitionsQueueAndItsOwnAndHandsOverByPartition) {
  start();
  command(dequeue::pull{host, topic, delivery_mode::at_least_once, 10, 2, false, 0, 3, "user"});
  auto* s = link();
  ASSERT_NE(s, nullptr);
  std::vector<std::string> consumes;
  for (auto& r : s->rpcs)
    if (r.rfind("basic.consume", 0) == 0) consumes.push_back(r);
  ASSERT_EQ(consumes.size(), 4u) << ::testing::PrintToString(s->rpcs);
  auto first = consumes[0].substr(consumes[0].rfind(' ') + 1);
  EXPECT_EQ(consumes[0], "basic.consume 1 s.consumer~0 " + first);
  EXPECT_EQ(consumes[1], "basic.consume 1 s.consumer~1 " + first + "+1");
  EXPECT_EQ(consumes[2], "basic.consume 1 s.consumer~2 " + first + "+2");
  EXPECT_EQ(consumes[3], "basic.consume 1 s.consumer " + first + "+3");
  EXPECT_EQ(s->count("basic.qos"), 1u);
  // Each partition's delivery reaches the host (it owns all three); a message that came to the
  // topic's own queue too.
  s->deliver(1, first + "+2", 1, R"({"user":"ann"})");
  s->deliver(1, first, 2, R"({"user":"bob"})");
  s->deliver(1, first + "+3", 3, R"({"user":"cy"})");
  settle();
  EXPECT_EQ(deliveries().size(), 3u);
  // No extra consumers come or go with the host's workers: one per queue.
  time.advance(std::chrono::seconds(5));
  settle();
  EXPECT_EQ(s->count("basic.cancel"), 0u);
  EXPECT_EQ(s->count("basic.consume"), 4u);
}

}  // namespace
}  // namespace dde::mqs
