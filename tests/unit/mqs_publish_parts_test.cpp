// The enqueuer's components, each on its own: what waits to be published and its retries
// (publish_queues), what waits for the broker's confirms (publish_confirms), the declaring channel
// (queue_admin) and the publishing connection's writes (frame_writer). Over the fake broker and a
// clock the test moves, on the test's thread.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "fake_amqp_session.hpp"
#include "frame_writer.hpp"
#include "publish_confirms.hpp"
#include "publish_queues.hpp"
#include "queue_admin.hpp"
#include "recording_connection.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;
using testing::fake_broker;
using testing::fake_session;
const clock::time_point t0 = clock::time_point{} + 1h;

outgoing_message message(std::uint64_t seq, delivery_mode mode = delivery_mode::at_least_once,
                         std::string topic = "a.b") {
  return outgoing_message{nullptr, std::move(topic), mode, seq, "m" + std::to_string(seq), {}, {}};
}

std::vector<std::uint64_t> seqs(const std::deque<outgoing_message>& q) {
  std::vector<std::uint64_t> out;
  for (auto& m : q) out.push_back(m.seq);
  return out;
}

std::vector<std::uint64_t> seqs(const std::vector<outgoing_message>& v) {
  std::vector<std::uint64_t> out;
  for (auto& m : v) out.push_back(m.seq);
  return out;
}

TEST(PublishQueues, EachModeWaitsInItsOwnQueueInArrivalOrder) {
  publish_queues q;
  q.add(message(1));
  q.add(message(2, delivery_mode::at_most_once));
  q.add(message(3));
  q.add(message(4, delivery_mode::reply));
  EXPECT_EQ(seqs(q.confirmed()), (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(seqs(q.transient()), (std::vector<std::uint64_t>{2, 4}));
  EXPECT_EQ(q.size(), 4u);
  EXPECT_EQ(q.take_front(delivery_mode::reply).seq, 2u);  // the transient queue holds both
  EXPECT_EQ(q.take_front(delivery_mode::at_least_once).seq, 1u);
  EXPECT_EQ(q.size(), 2u);
}

TEST(PublishQueues, DueRetriesGoBeforeWhatWaitsInTheOrderTheyWereNacked) {
  publish_queues q;
  q.add(message(10));
  q.retry_at({message(1), message(2)}, t0 + 200ms);
  q.retry_at({message(3)}, t0 + 300ms);
  EXPECT_EQ(q.next_retry(), t0 + 200ms);
  EXPECT_EQ(q.size(), 4u);
  q.take_due_retries(t0 + 199ms);
  EXPECT_EQ(seqs(q.confirmed()), (std::vector<std::uint64_t>{10}));
  q.take_due_retries(t0 + 250ms);
  EXPECT_EQ(seqs(q.confirmed()), (std::vector<std::uint64_t>{1, 2, 10}));
  EXPECT_EQ(q.next_retry(), t0 + 300ms);
  q.take_due_retries(t0 + 300ms);
  EXPECT_EQ(seqs(q.confirmed()), (std::vector<std::uint64_t>{3, 1, 2, 10}));  // due later, nacked later
  EXPECT_FALSE(q.next_retry());
}

TEST(PublishQueues, ALostConnectionsUnconfirmedGoFirstInPublishOrder) {
  publish_queues q;
  q.add(message(5));
  q.put_back({message(1), message(2)});
  EXPECT_EQ(seqs(q.confirmed()), (std::vector<std::uint64_t>{1, 2, 5}));
}

TEST(PublishQueues, AtLeastOnceIsReadyOnlyWithinTheConfirmWindow) {
  publish_queues q;
  EXPECT_FALSE(q.ready(0, 8));
  q.add(message(1));
  EXPECT_TRUE(q.ready(7, 8));
  EXPECT_FALSE(q.ready(8, 8));
  q.add(message(2, delivery_mode::at_most_once));
  EXPECT_TRUE(q.ready(8, 8));  // at-most-once waits for no confirm
}

TEST(PublishConfirms, SettledMessagesComeOutInPublishOrderAndALostConnectionReturnsTheRest) {
  publish_confirms c(1000ms);
  for (std::uint64_t s = 1; s <= 4; ++s) c.published(message(s), t0);
  std::vector<outgoing_message> out;
  c.settle(2, false, true, out, t0 + 10ms);  // tag 2 alone
  EXPECT_EQ(seqs(out), (std::vector<std::uint64_t>{2}));
  out.clear();
  c.settle(3, true, true, out, t0 + 20ms);  // 1 and 3: multiple
  EXPECT_EQ(seqs(out), (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(c.size(), 1u);
  c.published(message(5), t0 + 30ms);
  auto again = c.connection_lost();
  EXPECT_EQ(seqs(again), (std::vector<std::uint64_t>{4, 5}));
  EXPECT_EQ(c.size(), 0u);
  c.published(message(6), t0 + 40ms);  // a new channel numbers from 1 again
  out.clear();
  c.settle(1, false, true, out, t0 + 50ms);
  EXPECT_EQ(seqs(out), (std::vector<std::uint64_t>{6}));
}

TEST(PublishConfirms, TheWaitForAConfirmStartsWithTheFirstUnconfirmedPublish) {
  publish_confirms c(1000ms);
  EXPECT_FALSE(c.overdue(t0 + 1h));  // nothing waits
  c.published(message(1), t0);
  c.published(message(2), t0 + 900ms);  // not a new wait: one was already unconfirmed
  EXPECT_FALSE(c.overdue(t0 + 999ms));
  auto why = c.overdue(t0 + 1000ms);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "2 messages had no confirm for 1000 ms");
}

TEST(PublishConfirms, NoConfirmIsOverdueWhileTheBrokerBlocksPublishing) {
  publish_confirms c(1000ms);
  c.published(message(1), t0);
  c.blocked();
  EXPECT_FALSE(c.overdue(t0 + 10s));
  c.unblocked(t0 + 10s);  // the wait starts again
  EXPECT_FALSE(c.overdue(t0 + 10s + 999ms));
  EXPECT_TRUE(c.overdue(t0 + 11s));
}

class QueueAdmin : public ::testing::Test {
 protected:
  fake_broker broker;
  fake_session session{broker, "publish"};
  queue_admin admin{3, {}};
};

TEST_F(QueueAdmin, ATopicsQueuesAreDeclaredOnceUntilTheyAreForgotten) {
  std::string error;
  EXPECT_EQ(admin.ensure(session, message(1), t0, error), queue_admin::outcome::declared);
  // at-least-once: its dead-letter queue first, then its own
  EXPECT_EQ(session.rpcs, (std::vector<std::string>{"queue.declare 3 dde.dead.a.b", "queue.declare 3 a.b"}));
  EXPECT_EQ(admin.ensure(session, message(2), t0 + 29s, error), queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs.size(), 2u);
  EXPECT_EQ(admin.ensure(session, message(3), t0 + 30s, error), queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs.size(), 4u);  // declared again: a queue someone deleted comes back
  admin.forget(message(4));
  EXPECT_EQ(admin.ensure(session, message(4), t0 + 31s, error), queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs.size(), 6u);
  admin.forget_all();
  EXPECT_EQ(admin.ensure(session, message(5, delivery_mode::at_most_once, "c.d"), t0 + 32s, error),
            queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs.back(), "queue.declare 3 c.d");  // at-most-once: no dead-letter queue
}

TEST_F(QueueAdmin, APartitionsQueueIsDeclaredForItsMessagesWithASingleActiveConsumer) {
  auto m = message(1);
  m.partition = 3;
  std::string error;
  EXPECT_EQ(admin.ensure(session, m, t0, error), queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs,
            (std::vector<std::string>{"queue.declare 3 dde.dead.a.b", "queue.declare 3 a.b~3"}));
  EXPECT_EQ(admin.ensure(session, m, t0, error), queue_admin::outcome::declared);
  EXPECT_EQ(session.rpcs.size(), 2u);  // declared lately
  auto spec = partition_spec("a.b", 3, delivery_mode::at_least_once);
  EXPECT_TRUE(spec.single_active_consumer);
  EXPECT_TRUE(spec.quorum);
  EXPECT_EQ(spec.dead_letter_queue, "dde.dead.a.b");  // the pool's dead letters, whatever the partition
}

TEST_F(QueueAdmin, ARefusedDeclareReopensTheChannelAndNamesTheQueue) {
  session.refuse_next["queue.declare 3 a.b"] = {"queue.declare: 403 ACCESS_REFUSED - no configure access",
                                                true, 403};
  std::string error;
  EXPECT_EQ(admin.ensure(session, message(1), t0, error), queue_admin::outcome::refused);
  EXPECT_EQ(error, "cannot declare queue a.b: queue.declare: 403 ACCESS_REFUSED - no configure access");
  EXPECT_EQ(session.rpcs.back(), "channel.open 3");
  EXPECT_EQ(admin.ensure(session, message(2), t0, error), queue_admin::outcome::declared);  // tried again
}

TEST_F(QueueAdmin, ALostConnectionIsToldApart) {
  session.refuse_next["queue.declare 3 dde.dead.a.b"] = {"queue.declare: socket closed", false, 0};
  std::string error;
  EXPECT_EQ(admin.ensure(session, message(1), t0, error), queue_admin::outcome::connection_lost);
  EXPECT_EQ(error, "queue.declare: socket closed");
}

TEST_F(QueueAdmin, DepthsAreAnsweredInTheOrderAskedAndAMissingQueueReopensTheChannel) {
  auto host = std::make_shared<dde::testing::recording_connection>(1);
  broker.depth["a.b"] = 42;
  session.refuse_next["queue.declare-passive 3 x.y"] = {"queue.declare (passive): 404 NOT_FOUND - no queue",
                                                        true, 404};
  admin.ask({{host, "x.y"}, {host, "a.b"}});
  EXPECT_FALSE(admin.answer_depths(&session));
  EXPECT_EQ(session.rpcs, (std::vector<std::string>{"queue.declare-passive 3 x.y", "channel.open 3",
                                                    "queue.declare-passive 3 a.b"}));
  auto records = host->take();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].header["topic"], "x.y");
  EXPECT_EQ(records[0].header["error"], "queue.declare (passive): 404 NOT_FOUND - no queue");
  EXPECT_EQ(records[1].header["topic"], "a.b");
  EXPECT_EQ(records[1].header["messages"], 42);
  admin.ask({{host, "a.b"}});
  EXPECT_FALSE(admin.answer_depths(nullptr));  // no connection: answered so
  records = host->take();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].header["error"], "not connected to the broker");
}

TEST(FrameWriter, WhatAFullSocketDoesNotTakeWaitsInOrderAndGoesFirstOnceItHasRoom) {
  fake_broker broker;
  broker.sockets = true;
  broker.socket_buffer = 4096;
  fake_session session{broker, "publish"};
  frame_writer writer;
  writer.set_nonblocking();
  writer.connected(session);
  ASSERT_TRUE(writer.batching());  // plain TCP
  std::string body(1000, 'x');
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(writer.add(1, "a.b", 2, body, {}));
  auto batched = writer.batched();
  EXPECT_GT(batched, 64u * 1000u);
  EXPECT_EQ(writer.flush(session), "");
  EXPECT_EQ(writer.batched(), 0u);
  ASSERT_TRUE(writer.pending());  // the socket took a part; no write waited for the rest
  std::string received;
  char buf[65536];
  while (received.size() < batched) {
    auto n = ::recv(session.peer(), buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) {
      ASSERT_TRUE(writer.pending()) << "the peer read everything written, yet bytes are missing";
      ASSERT_EQ(writer.write_unsent(session), "");
      continue;
    }
    received.append(buf, std::size_t(n));
  }
  EXPECT_FALSE(writer.pending());
  EXPECT_EQ(received.size(), batched);
  writer.clear();
  EXPECT_FALSE(writer.pending());
}

}  // namespace
}  // namespace dde::mqs
