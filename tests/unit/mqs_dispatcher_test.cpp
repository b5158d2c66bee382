// The MQS dequeuing bookkeeping, through a fake broker and fake hosts.
#include <gtest/gtest.h>

#include <set>

#include "dde/protocol/mqs_request.hpp"
#include "dispatcher.hpp"
#include "mqs_fake_port.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using clock_type = dispatcher::clock;
using testing::ref;

class Dispatcher : public testing::dispatcher_fixture {
 protected:
  const std::string topic = "sys.consumer";
};

TEST_F(Dispatcher, TheFirstPullOfATopicStartsItsConsumerOnce) {
  EXPECT_EQ(d.pull(1, topic, alo, 1, t0), "");
  EXPECT_EQ(d.pull(2, topic, alo, 1, t0), "");
  EXPECT_EQ(port.started, std::vector<std::string>{topic});
  EXPECT_TRUE(d.has_topic(topic));
}

TEST_F(Dispatcher, EachHostPullingATopicAddsABrokerConsumerAndLeavingRemovesIt) {
  using calls = std::vector<std::pair<std::string, std::uint32_t>>;
  d.pull(1, topic, alo, 4, t0);  // the consumer start_consumer opened is the first
  d.pull(1, topic, alo, 4, t0);  // more credit from the same host: no new consumer
  EXPECT_EQ(port.consumers, calls{});
  d.pull(2, topic, alo, 0, t0);  // a pull without credit still makes a host a consumer
  d.pull(3, topic, alo, 1, t0);
  EXPECT_EQ(port.consumers, (calls{{topic, 2}, {topic, 3}}));
  EXPECT_EQ(d.consumers(topic), 3u);
  d.cancel(2, topic, t0);
  d.cancel(2, topic, t0);  // twice: nothing more
  d.disconnect(3, t0);
  d.disconnect(1, t0);  // the last host: the one consumer left stays until the topic goes idle
  EXPECT_EQ(port.consumers, (calls{{topic, 2}, {topic, 3}, {topic, 2}, {topic, 1}}));
  EXPECT_EQ(d.consumers(topic), 0u);
  d.pull(4, topic, alo, 1, t0);
  EXPECT_EQ(port.consumers.size(), 4u);
}

TEST_F(Dispatcher, AHostThatTellsItsWorkersStandsForOneBrokerConsumerEach) {
  using calls = std::vector<std::pair<std::string, std::uint32_t>>;
  d.pull(1, topic, alo, 8, t0, 4);  // four workers
  d.pull(2, topic, alo, 8, t0);     // a host that does not say: one
  d.pull(1, topic, alo, 8, t0);     // not said again: still four
  d.pull(1, topic, alo, 8, t0, 2);  // scaled down to two
  EXPECT_EQ(port.consumers, (calls{{topic, 4}, {topic, 5}, {topic, 3}}));
  EXPECT_EQ(d.consumers(topic), 3u);
  d.pull(3, topic, alo, 8, t0, 1000);  // capped
  EXPECT_EQ(port.consumers.back(), (std::pair<std::string, std::uint32_t>{topic, max_consumers}));
  d.disconnect(3, t0);
  EXPECT_EQ(port.consumers.back(), (std::pair<std::string, std::uint32_t>{topic, 3}));
}

TEST_F(Dispatcher, APullIsRefusedWhenTheConsumerCannotStart) {
  port.refuse_start = "cannot consume";
  EXPECT_EQ(d.pull(1, topic, alo, 1, t0), "cannot consume");
  EXPECT_FALSE(d.has_topic(topic));
}

TEST_F(Dispatcher, APullInAnotherModeThanTheTopicsIsRefused) {
  d.pull(1, topic, alo, 1, t0);
  auto err = d.pull(2, topic, amo, 1, t0);
  EXPECT_NE(err.find("at-least-once"), std::string::npos);
  EXPECT_EQ(d.credit(2, topic), 0u);
}

TEST_F(Dispatcher, AHostWhoseSendQueueIsFullIsSkippedAndDeliveriesWaitUntilItDrains) {
  d.pull(1, topic, amo, 100, t0);
  d.pull(2, topic, amo, 100, t0);
  port.full = {1};
  d.on_delivery(topic, ref(1), false, "a");
  d.on_delivery(topic, ref(2), false, "b");
  ASSERT_EQ(port.deliveries.size(), 2u);
  for (auto& del : port.deliveries) EXPECT_EQ(del.client, 2u);
  port.full = {1, 2};
  d.on_delivery(topic, ref(3), false, "c");
  EXPECT_EQ(port.deliveries.size(), 2u);
  EXPECT_EQ(port.acked.size(), 2u) << "at-most-once: acked only once handed over";
  EXPECT_TRUE(d.blocked());
  EXPECT_FALSE(d.retry_blocked());
  port.full.clear();
  EXPECT_TRUE(d.retry_blocked());
  ASSERT_EQ(port.deliveries.size(), 3u);
  EXPECT_EQ(port.deliveries.back().body, "c");
  EXPECT_EQ(port.acked.size(), 3u);
}

TEST_F(Dispatcher, ADeliveryWithoutCreditWaitsUntilAPull) {
  d.pull(1, topic, alo, 1, t0);
  d.on_delivery(topic, ref(1), false, "a");
  d.on_delivery(topic, ref(2), false, "b");
  ASSERT_EQ(port.deliveries.size(), 1u);
  EXPECT_EQ(d.buffered(topic), 1u);
  d.pull(1, topic, alo, 5, t0);
  ASSERT_EQ(port.deliveries.size(), 2u);
  EXPECT_EQ(port.deliveries[1].body, "b");
  EXPECT_EQ(d.buffered(topic), 0u);
  EXPECT_EQ(d.credit(1, topic), 4u);
}

TEST_F(Dispatcher, HostsWithCreditTakeDeliveriesInTurn) {
  d.pull(1, topic, amo, 2, t0);
  d.pull(2, topic, amo, 2, t0);
  d.pull(3, topic, amo, 1, t0);
  for (std::uint64_t t = 1; t <= 6; ++t) d.on_delivery(topic, ref(t), false, std::to_string(t));
  std::vector<client_id> order;
  for (auto& x : port.deliveries) order.push_back(x.client);
  EXPECT_EQ(order, (std::vector<client_id>{1, 2, 3, 1, 2}));
  EXPECT_EQ(d.buffered(topic), 1u);  // nobody has credit left
}

TEST_F(Dispatcher, AtMostOnceDeliveriesAreAckedAsTheyAreHandedOver) {
  d.pull(1, topic, amo, 1, t0);
  d.on_delivery(topic, ref(7), false, "x");
  EXPECT_EQ(port.acked, std::vector<broker_ref>{ref(7)});
  EXPECT_EQ(d.unacked(1), 0u);
}

TEST_F(Dispatcher, AtLeastOnceDeliveriesAreAckedOnlyWhenTheHostAcks) {
  d.pull(1, topic, alo, 2, t0);
  d.on_delivery(topic, ref(7), false, "x");
  d.on_delivery(topic, ref(8), true, "y");
  EXPECT_TRUE(port.acked.empty());
  EXPECT_EQ(d.unacked(1), 2u);
  EXPECT_TRUE(port.deliveries[1].redelivered);
  d.ack(1, {port.deliveries[1].tag}, t0);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{ref(8)});
  EXPECT_EQ(d.unacked(1), 1u);
}

TEST_F(Dispatcher, MqsTagsAreUniqueAcrossTopicsAndHosts) {
  d.pull(1, topic, alo, 5, t0);
  d.pull(2, "sys.other", alo, 5, t0);
  d.on_delivery(topic, ref(1, 1), false, "");
  d.on_delivery("sys.other", ref(1, 2), false, "");
  d.on_delivery(topic, ref(2, 1), false, "");
  std::set<std::uint64_t> tags;
  for (auto& x : port.deliveries) tags.insert(x.tag);
  EXPECT_EQ(tags.size(), 3u);
}

TEST_F(Dispatcher, AnAckForAnotherHostsTagOrAnUnknownTagIsIgnored) {
  d.pull(1, topic, alo, 1, t0);
  d.on_delivery(topic, ref(1), false, "x");
  auto tag = port.deliveries[0].tag;
  d.ack(2, {tag}, t0);
  d.ack(1, {tag + 1000}, t0);
  EXPECT_TRUE(port.acked.empty());
  d.ack(1, {tag}, t0);
  d.ack(1, {tag}, t0);  // twice: once only
  EXPECT_EQ(port.acked.size(), 1u);
}

TEST_F(Dispatcher, ANackRequeuesOrDropsAsAsked) {
  d.pull(1, topic, alo, 2, t0);
  d.on_delivery(topic, ref(1), false, "x");
  d.on_delivery(topic, ref(2), false, "y");
  d.nack(1, {port.deliveries[0].tag}, true, t0);
  d.nack(1, {port.deliveries[1].tag}, false, t0);
  EXPECT_EQ(port.requeued, std::vector<broker_ref>{ref(1)});
  EXPECT_EQ(port.dropped, std::vector<broker_ref>{ref(2)});
  EXPECT_EQ(port.returns, std::vector<std::string>{topic}) << "only the requeued one counts as returned";
  EXPECT_EQ(d.unacked(1), 0u);
}

TEST_F(Dispatcher, AHostThatDisconnectsLosesItsCreditAndItsUnackedDeliveriesAreRequeued) {
  d.pull(1, topic, alo, 3, t0);
  d.pull(2, topic, alo, 1, t0);
  d.on_delivery(topic, ref(1), false, "a");  // host 1
  d.on_delivery(topic, ref(2), false, "b");  // host 2
  d.on_delivery(topic, ref(3), false, "c");  // host 1
  d.disconnect(1, t0);
  EXPECT_EQ(port.requeued, (std::vector<broker_ref>{ref(1), ref(3)}));
  EXPECT_EQ(port.returns, (std::vector<std::string>{topic, topic}));
  EXPECT_EQ(d.credit(1, topic), 0u);
  EXPECT_EQ(d.unacked(1), 0u);
  EXPECT_EQ(d.unacked(2), 1u);
  d.on_delivery(topic, ref(4), true, "a");  // nobody has credit: it waits
  EXPECT_EQ(port.deliveries.size(), 3u);
  EXPECT_EQ(d.buffered(topic), 1u);
}

TEST_F(Dispatcher, CancelRequeuesOnlyTheDeliveriesOfThatTopic) {
  d.pull(1, topic, alo, 1, t0);
  d.pull(1, "sys.other", alo, 1, t0);
  d.on_delivery(topic, ref(1, 1), false, "a");
  d.on_delivery("sys.other", ref(1, 2), false, "b");
  d.cancel(1, topic, t0);
  EXPECT_EQ(port.requeued, std::vector<broker_ref>{ref(1, 1)});
  EXPECT_EQ(d.unacked(1), 1u);
  EXPECT_EQ(d.credit(1, topic), 0u);
}

TEST_F(Dispatcher, AfterTheBrokerConnectionDropsOldTagsAreVoidAndCreditsRemain) {
  d.pull(1, topic, alo, 3, t0);
  d.on_delivery(topic, ref(1), false, "a");
  auto old_tag = port.deliveries[0].tag;
  d.on_broker_lost();
  EXPECT_EQ(d.unacked(1), 0u);
  d.ack(1, {old_tag}, t0);
  EXPECT_TRUE(port.acked.empty());
  EXPECT_EQ(d.credit(1, topic), 2u);
  d.on_delivery(topic, ref(1, 1, 2), true, "a");  // the broker redelivers on the new connection
  EXPECT_NE(port.deliveries[1].tag, old_tag);
  EXPECT_TRUE(port.deliveries[1].redelivered);
}

TEST_F(Dispatcher, ALostConsumerForgetsItsBufferedDeliveries) {
  d.pull(1, topic, alo, 1, t0);
  d.on_delivery(topic, ref(1), false, "a");
  d.on_delivery(topic, ref(2), false, "b");
  d.on_consumer_lost(topic);
  EXPECT_EQ(d.buffered(topic), 0u);
  EXPECT_EQ(d.unacked(1), 0u);
  EXPECT_TRUE(d.has_topic(topic));
}

TEST_F(Dispatcher, AnIdleTopicIsClosedAfterTheTimeoutOnlyWithNothingOutstanding) {
  d.pull(1, topic, alo, 1, t0);
  d.on_delivery(topic, ref(1), false, "a");
  d.expire_idle(t0 + 60s);  // a delivery is unacked
  EXPECT_TRUE(d.has_topic(topic));
  d.ack(1, {port.deliveries[0].tag}, t0 + 61s);
  d.expire_idle(t0 + 61s + 9s);
  EXPECT_TRUE(d.has_topic(topic));
  d.expire_idle(t0 + 61s + 10s);
  EXPECT_FALSE(d.has_topic(topic));
  EXPECT_EQ(port.stopped, std::vector<std::string>{topic});
}

TEST_F(Dispatcher, ATopicWithAHostWaitingOnCreditIsNotIdle) {
  d.pull(1, topic, amo, 1, t0);
  d.expire_idle(t0 + 1h);
  EXPECT_TRUE(d.has_topic(topic));
  d.disconnect(1, t0 + 1h);
  d.expire_idle(t0 + 1h + 10s);
  EXPECT_FALSE(d.has_topic(topic));
}

TEST_F(Dispatcher, OnlyTopicsWhoseCreditRanOutAreWatchedForIdlenessUntilTheyHaveCreditAgain) {
  d.pull(1, topic, amo, 2, t0);
  d.expire_idle(t0 + 1s);
  EXPECT_FALSE(d.watching_idle()) << "its host holds credit: it cannot go idle";
  d.on_delivery(topic, ref(1), false, "a");
  EXPECT_FALSE(d.watching_idle()) << "one credit left";
  d.on_delivery(topic, ref(2), false, "b");
  EXPECT_TRUE(d.watching_idle()) << "its credit ran out";
  d.pull(1, topic, amo, 1, t0 + 5s);
  d.expire_idle(t0 + 6s);
  EXPECT_FALSE(d.watching_idle()) << "credit again";
  d.on_delivery(topic, ref(3), false, "c");
  ASSERT_TRUE(d.watching_idle());
  d.expire_idle(t0 + 14s);
  EXPECT_TRUE(d.has_topic(topic)) << "idle since its last pull, 9 s ago";
  d.expire_idle(t0 + 15s);
  EXPECT_FALSE(d.has_topic(topic));
  EXPECT_FALSE(d.watching_idle());
  EXPECT_EQ(port.stopped, std::vector<std::string>{topic});
}

TEST_F(Dispatcher, ADeliveryForATopicNobodyPullsGoesBackToTheQueue) {
  d.on_delivery("sys.nobody", ref(5), false, "x");
  EXPECT_EQ(port.requeued, std::vector<broker_ref>{ref(5)});
}

}  // namespace
}  // namespace dde::mqs
