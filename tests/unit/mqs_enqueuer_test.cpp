// The enqueuer without a broker or a thread: its loop turns driven by the test over a fake broker
// and a clock the test moves (confirms, the confirm window, republishing after a lost connection,
// nacks, refused declares, reconnect backoff, depth queries).
#include <gtest/gtest.h>

#include "enqueuer.hpp"
#include "fake_amqp_session.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using namespace testing;  // the fake broker, session and clock, recording_connection, topic

class EnqueuerTest : public ::testing::Test {
 protected:
  EnqueuerTest() { cfg.confirm_window = 1000; }

  enqueuer& start() {
    enq = std::make_unique<enqueuer>(cfg, flow,
                                     broker_env{broker.opener(), time.fn(), [this] { return wall; }});
    return *enq;
  }
  /// Turns the loop until it would wait (it has nothing to do before an event or a deadline).
  std::chrono::milliseconds settle() {
    for (int i = 0; i < 1000; ++i) {
      auto wait = enq->turn();
      if (!wait) ADD_FAILURE() << "the enqueuer stopped";
      if (!wait || wait->count() > 0) return wait.value_or(0ms);
    }
    ADD_FAILURE() << "the enqueuer never went idle";
    return 0ms;
  }
  void send(std::initializer_list<std::uint64_t> seqs, delivery_mode mode = delivery_mode::at_least_once) {
    std::vector<outgoing_message> batch;
    for (auto seq : seqs) {
      outgoing_message m{host, topic, mode, seq, "m" + std::to_string(seq), {}, {}};
      m.props.message_id = "id-" + std::to_string(seq);
      flow.add(1, m.body.size());
      batch.push_back(std::move(m));
    }
    enq->submit(std::move(batch));
  }
  fake_session& session() {
    auto* s = broker.find("enqueuer");
    if (!s) throw std::runtime_error("no open session");
    return *s;
  }
  /// Bodies published to `topic` on the confirm channel, in order.
  std::vector<std::string> published(fake_session& s, std::uint16_t channel = 1) {
    std::vector<std::string> out;
    for (auto& p : s.published)
      if (p.channel == channel && p.routing_key == topic) out.push_back(p.body);
    return out;
  }
  std::vector<mqs_record> records() {
    std::vector<mqs_record> out;
    for (auto& [record, body] : mqs_records(*host)) out.push_back(record);
    return out;
  }
  std::vector<std::uint64_t> confirmed() {
    std::vector<std::uint64_t> out;
    for (auto& r : records()) {
      if (auto* c = std::get_if<confirm_record>(&r))
        out.insert(out.end(), c->seqs.begin(), c->seqs.end());
      else
        ADD_FAILURE() << "a record other than a confirm";
    }
    return out;
  }

  fake_time time;
  /// The wall clock publishes are stamped with.
  std::chrono::system_clock::time_point wall{std::chrono::seconds(1'790'000'000)};
  fake_broker broker;
  config cfg;
  flow_control flow{100000, std::size_t(1) << 30};
  std::shared_ptr<recording_connection> host = std::make_shared<recording_connection>(7);
  std::unique_ptr<enqueuer> enq;
};

TEST_F(EnqueuerTest, ConnectsWithAConfirmChannelAndDeclaresTheQueuesBeforeTheFirstPublish) {
  start();
  send({1});
  settle();
  auto& s = session();
  ASSERT_GE(s.rpcs.size(), 6u);
  EXPECT_EQ(s.rpcs[0], "channel.open 1");
  EXPECT_EQ(s.rpcs[1], "confirm.select 1");
  EXPECT_EQ(s.rpcs[2], "channel.open 2");
  EXPECT_EQ(s.rpcs[3], "channel.open 3");
  EXPECT_EQ(s.count("queue.declare 3 dde.dead.s.consumer"), 1u);
  EXPECT_EQ(s.count("queue.declare 3 s.consumer"), 1u);
  ASSERT_EQ(s.published.size(), 1u);
  EXPECT_EQ(s.published[0].delivery_mode, 2) << "at-least-once is persistent";
  EXPECT_EQ(s.published[0].message_id, "id-1");
  EXPECT_TRUE(enq->connected());
}

TEST_F(EnqueuerTest, AtLeastOnceIsConfirmedToTheHostOnlyOnceTheBrokerConfirms) {
  start();
  send({1, 2, 3});
  settle();
  auto& s = session();
  EXPECT_EQ(published(s), (std::vector<std::string>{"m1", "m2", "m3"}));
  EXPECT_TRUE(records().empty()) << "nothing is confirmed before the broker confirms";
  EXPECT_EQ(flow.messages(), 3u);

  s.confirm(2, true);  // broker tags 1 and 2
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{1, 2}));
  s.confirm(3, false);
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(flow.messages(), 0u) << "a confirmed message leaves the backlog";
  EXPECT_EQ(s.count("queue.declare 3 s.consumer"), 1u) << "a queue is declared once, not per message";
}

TEST_F(EnqueuerTest, NoMoreThanTheConfirmWindowIsUnconfirmedAtOnce) {
  cfg.confirm_window = 2;
  start();
  send({1, 2, 3, 4, 5});
  settle();
  auto& s = session();
  EXPECT_EQ(published(s).size(), 2u);
  s.confirm(1, false);
  settle();
  EXPECT_EQ(published(s).size(), 3u) << "one confirm lets one more out";
  s.confirm(3, true);
  settle();
  EXPECT_EQ(published(s), (std::vector<std::string>{"m1", "m2", "m3", "m4", "m5"}));
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{1, 2, 3}));
}

/// How the first connection goes away in the republish test.
enum class loss { socket, connection_close, channel_close };

class EnqueuerLossTest : public EnqueuerTest, public ::testing::WithParamInterface<loss> {};

TEST_P(EnqueuerLossTest, WhatTheBrokerHadNotConfirmedIsPublishedAgainInOrderOnTheNextConnection) {
  start();
  send({1, 2, 3, 4});
  settle();
  auto* first = &session();
  first->confirm(1, false);
  switch (GetParam()) {
    case loss::socket: first->drop(); break;
    case loss::connection_close:
      first->close_connection_by_broker(320, "CONNECTION_FORCED - broker restart");
      break;
    case loss::channel_close:
      first->close_channel_by_broker(1, 406, "PRECONDITION_FAILED - unknown delivery tag");
      break;
  }
  auto wait = settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{1}));
  EXPECT_FALSE(enq->connected());
  EXPECT_EQ(broker.find("enqueuer"), nullptr) << "the lost connection is closed";
  EXPECT_GE(wait, 80ms) << "reconnecting waits the first backoff (100 ms, jittered down at most 20%)";
  EXPECT_LE(wait, 100ms);

  send({5});  // sent while disconnected: queued behind the ones to publish again
  time.advance(wait - 1ms);
  settle();
  EXPECT_EQ(broker.attempts.size(), 1u) << "no reconnect before the backoff";
  time.advance(1ms);
  settle();
  ASSERT_EQ(broker.attempts.size(), 2u);
  auto& second = session();
  EXPECT_EQ(published(second), (std::vector<std::string>{"m2", "m3", "m4", "m5"}));
  // The broker may hold a first copy of m2..m4, not of m5: the copies that may be second are marked.
  const std::pair<std::string, std::string> mark{"x-dde-resent", "1"};
  std::vector<bool> marked;
  for (auto& m : second.published)
    if (m.channel == 1) marked.push_back(std::count(m.headers.begin(), m.headers.end(), mark) == 1);
  EXPECT_EQ(marked, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(second.count("queue.declare 3 s.consumer"), 1u) << "declared again on the new connection";
  second.confirm(4, true);
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{2, 3, 4, 5}));
  EXPECT_EQ(flow.messages(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Losses, EnqueuerLossTest,
                         ::testing::Values(loss::socket, loss::connection_close, loss::channel_close));

TEST_F(EnqueuerTest, NackedMessagesArePublishedAgainAfter200msInTheOrderTheyWereSent) {
  start();
  send({1, 2, 3, 4});
  settle();
  auto& s = session();
  s.nack(3, true);  // a quorum queue without a leader refuses tags 1..3
  auto wait = settle();
  EXPECT_TRUE(records().empty()) << "a nack is not refused to the host: at-least-once does not drop";
  EXPECT_EQ(wait, 200ms);
  EXPECT_EQ(published(s).size(), 4u);
  time.advance(199ms);
  settle();
  EXPECT_EQ(published(s).size(), 4u) << "not before the pause";
  time.advance(1ms);
  settle();
  EXPECT_EQ(published(s), (std::vector<std::string>{"m1", "m2", "m3", "m4", "m1", "m2", "m3"}));
  for (std::size_t i = 0; i < s.published.size(); ++i)
    EXPECT_EQ(s.published[i].headers.size(), i < 4 ? 0u : 1u)
        << "only the copies sent again are marked resent";
  EXPECT_EQ(s.count("queue.declare 3 s.consumer"), 2u) << "the queue is declared again before the retry";
  s.confirm(7, true);
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{4, 1, 2, 3}));
}

TEST_F(EnqueuerTest, NacksThatKeepComingForTwoSecondsReplaceTheConnectionThoughOtherPublishesAreConfirmed) {
  // RabbitMQ 3.10 goes on nacking a channel's publishes to a quorum queue whose leader died, while
  // it confirms those to other queues.
  start();
  send({1});
  settle();
  auto* s = &session();
  std::uint64_t tag = 1;  // the channel's last publish
  s->nack(tag, false);
  settle();
  for (int round = 1; round <= 4; ++round) {
    EXPECT_TRUE(enq->connected()) << "round " << round;
    time.advance(500ms);
    settle();  // m1 again
    send({std::uint64_t(10 + round)});
    settle();
    tag += 2;
    s->confirm(tag, false);
    s->nack(tag - 1, false);
    settle();
  }
  EXPECT_FALSE(enq->connected()) << "2 s of nacks, none more than a second apart";
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{11, 12, 13, 14}));

  time.advance(200ms);  // the reconnect's backoff and m1's retry
  settle();
  s = &session();
  EXPECT_EQ(published(*s), (std::vector<std::string>{"m1"}));
  tag = 1;
  for (int round = 1; round <= 3; ++round) {  // a nack now and then is no reason to move
    s->nack(tag, false);
    settle();
    time.advance(1500ms);
    settle();
    ++tag;
    EXPECT_TRUE(enq->connected()) << "round " << round;
  }
  s->confirm(tag, false);
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{1}));
}

TEST_F(EnqueuerTest,
       ABrokerThatConfirmsNothingForTheConfirmTimeoutLosesTheConnectionUnlessItBlocksPublishing) {
  cfg.confirm_timeout = 5000ms;
  start();
  send({1, 2});
  settle();
  auto* first = &session();
  first->confirm(1, false);
  settle();
  time.advance(4000ms);
  send({3});  // a publish restarts no wait: 2 has waited since 1 was confirmed
  settle();
  time.advance(999ms);
  settle();
  EXPECT_TRUE(enq->connected()) << "4,999 ms without a confirm";
  time.advance(1ms);
  settle();
  EXPECT_FALSE(enq->connected()) << "a frozen node holds the connection open and answers nothing";
  EXPECT_EQ(broker.find("enqueuer"), nullptr);
  time.advance(100ms);
  settle();
  auto* second = &session();
  EXPECT_EQ(published(*second), (std::vector<std::string>{"m2", "m3"}));
  time.advance(9999ms);
  settle();
  EXPECT_TRUE(enq->connected()) << "after a move that brought no confirm, twice as long";
  time.advance(1ms);
  settle();
  EXPECT_FALSE(enq->connected());
  time.advance(100ms);
  settle();
  second = &session();
  second->confirm(1, false);  // m2: the broker answers again, and the wait is 5 s again
  settle();
  time.advance(4999ms);
  settle();
  EXPECT_TRUE(enq->connected());
  time.advance(1ms);
  settle();
  EXPECT_FALSE(enq->connected()) << "m3 waited 5 s since the last confirm";
  time.advance(100ms);
  settle();
  second = &session();
  EXPECT_EQ(published(*second), (std::vector<std::string>{"m3"}));

  // Blocked by an alarm, the broker confirms nothing and no other node would do better: wait.
  second->block("low on memory");
  settle();
  time.advance(60000ms);
  settle();
  EXPECT_TRUE(enq->connected()) << "blocked: confirms cannot come";
  second->unblock();
  settle();
  time.advance(9999ms);
  settle();
  EXPECT_TRUE(enq->connected()) << "the wait starts again when the broker unblocks";
  second->confirm(1, true);
  settle();
  EXPECT_EQ(confirmed(), (std::vector<std::uint64_t>{1, 2, 3}));
  time.advance(60000ms);
  settle();
  EXPECT_TRUE(enq->connected()) << "nothing unconfirmed: nothing overdue";
}

TEST_F(EnqueuerTest, EveryMessageIsStampedWithTheWallClockOfItsFirstPublishInMicroseconds) {
  start();
  send({1});
  send({2}, delivery_mode::at_most_once);
  settle();
  auto& s = session();
  ASSERT_EQ(s.published.size(), 2u);
  EXPECT_EQ(s.published[0].published_us, 1'790'000'000'000'000u);
  EXPECT_EQ(s.published[1].published_us, 1'790'000'000'000'000u) << "at-most-once too";

  wall += std::chrono::microseconds(1500);
  send({3});
  settle();
  EXPECT_EQ(s.published.back().published_us, 1'790'000'000'001'500u);
  s.nack(3, true);  // tags 1 and 3 (the at-least-once ones) come back
  settle();
  wall += std::chrono::seconds(1);
  time.advance(200ms);
  settle();
  ASSERT_EQ(s.published.size(), 5u);
  EXPECT_EQ(s.published[3].body, "m1");
  EXPECT_EQ(s.published[3].published_us, 1'790'000'000'000'000u) << "published again: its first stamp stays";
  EXPECT_EQ(s.published[4].published_us, 1'790'000'000'001'500u);
}

TEST_F(EnqueuerTest, ARefusedQueueDeclareRejectsThatMessageToItsHostAndTheNextOneStillGoes) {
  start();
  settle();
  auto& s = session();
  s.refuse_next["queue.declare 3 s.consumer"] = {"queue.declare: 403 ACCESS_REFUSED - no configure access",
                                                 true, 403};
  send({1});
  settle();
  auto got = records();
  ASSERT_EQ(got.size(), 1u);
  auto* reject = std::get_if<reject_record>(&got[0]);
  ASSERT_NE(reject, nullptr);
  EXPECT_EQ(reject->seqs, (std::vector<std::uint64_t>{1}));
  EXPECT_NE(reject->error.find("cannot declare queue s.consumer"), std::string::npos) << reject->error;
  EXPECT_NE(reject->error.find("403"), std::string::npos) << reject->error;
  EXPECT_EQ(s.count("channel.open 3"), 2u) << "the declaring channel is opened again";
  EXPECT_EQ(flow.messages(), 0u);

  send({2});
  settle();
  EXPECT_EQ(published(s), (std::vector<std::string>{"m2"}));
  EXPECT_TRUE(enq->connected());
}

TEST_F(EnqueuerTest, ABrokerThatRefusesConnectionsIsTriedAgainAfterGrowingWaitsAndThenPublishes) {
  broker.refuse_open = "login refused: 403 ACCESS_REFUSED";
  start();
  send({1});
  std::vector<std::chrono::milliseconds> waits;
  for (int i = 0; i < 12; ++i) {
    auto wait = settle();
    EXPECT_EQ(broker.attempts.size(), std::size_t(i + 1));
    waits.push_back(wait);
    time.advance(wait);
  }
  for (std::size_t i = 1; i < 4; ++i) EXPECT_GT(waits[i], waits[i - 1]) << "waits grow";
  // A broker that comes back is found within half a second, however long it was down (the recovery
  // target of `dde-bench-suite --only 8`).
  for (std::size_t i = 0; i < waits.size(); ++i) EXPECT_LE(waits[i], 500ms) << "attempt " << i + 1;
  EXPECT_GE(waits.back(), 400ms) << "at most 20% shorter than the cap";
  broker.refuse_open.clear();
  settle();
  EXPECT_EQ(published(session()), (std::vector<std::string>{"m1"}));
  EXPECT_EQ(session().name, "dde-mqs enqueuer");
}

TEST_F(EnqueuerTest, AtMostOnceGoesOnTheTransientChannelAndLeavesTheBacklogWhenWritten) {
  start();
  send({0, 0}, delivery_mode::at_most_once);
  settle();
  auto& s = session();
  auto transient = published(s, 2);
  EXPECT_EQ(transient.size(), 2u);
  for (auto& p : s.published) EXPECT_EQ(p.delivery_mode, 1) << "transient";
  EXPECT_EQ(s.count("queue.declare 3 s.consumer"), 1u);
  EXPECT_EQ(flow.messages(), 0u);
  EXPECT_TRUE(records().empty()) << "no confirms for at-most-once";
}

TEST_F(EnqueuerTest, ADepthQueryIsAnsweredFromAPassiveDeclareOrWithWhyNot) {
  start();
  enq->ask_depth({{host, topic}});
  settle();
  auto got = records();  // asked in the turn that connects: answered from the broker
  ASSERT_EQ(got.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<depth_record>(got[0]));
  EXPECT_TRUE(std::get<depth_record>(got[0]).error.empty());
  auto& s = session();
  s.depth[topic] = 42;
  enq->ask_depth({{host, topic}});
  settle();
  got = records();
  ASSERT_EQ(got.size(), 1u);
  auto* d = std::get_if<depth_record>(&got[0]);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->topic, topic);
  EXPECT_EQ(d->messages, 42u);
  EXPECT_TRUE(d->error.empty());

  s.refuse_next["queue.declare-passive 3"] = {"queue.declare (passive): 404 NOT_FOUND - no queue", true, 404};
  enq->ask_depth({{host, "s.other"}});
  settle();
  got = records();
  ASSERT_EQ(got.size(), 1u);
  d = std::get_if<depth_record>(&got[0]);
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->error.find("404"), std::string::npos) << d->error;
  EXPECT_TRUE(enq->connected()) << "a missing queue costs the channel, not the connection";

  s.drop();
  settle();
  enq->ask_depth({{host, topic}});
  settle();
  got = records();
  ASSERT_EQ(got.size(), 1u);
  d = std::get_if<depth_record>(&got[0]);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->error, "not connected to the broker");
}

}  // namespace
}  // namespace dde::mqs
