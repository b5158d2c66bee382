// Leases in the dispatcher (dispatcher_leases.cpp): what it asks of the broker side when a delivery
// is held past the lease, as the copy's confirm and the copy itself come, and as hosts settle.
#include <gtest/gtest.h>

#include "dispatcher.hpp"
#include "mqs_fake_port.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using testing::fake_port;
using testing::ref;

class Leases : public ::testing::Test {
 protected:
  /// One delivery of `topic` (broker tag 1), handed to host 1 at t0; its MQS tag.
  std::uint64_t handed_over(delivery_mode mode = delivery_mode::at_least_once) {
    d.pull(1, topic, mode, 1, t0);
    d.on_delivery(topic, first, false, "job", {}, t0);
    EXPECT_EQ(port.deliveries.size(), 1u);
    return port.deliveries.empty() ? 0 : port.deliveries.back().tag;
  }
  /// Renews at the lease's end; the id of the copy published.
  std::uint64_t renewed() {
    d.renew_leases(t0 + lease);
    EXPECT_EQ(port.leases.size(), 1u);
    return port.leases.empty() ? 0 : port.leases.back().id;
  }

  fake_port port;
  std::chrono::milliseconds lease = 1000ms;
  dispatcher d{port, 10000ms, lease};
  dispatcher::clock::time_point t0 = dispatcher::clock::now();
  const std::string topic = "sys.long";
  const broker_ref first = ref(1);
  const broker_ref copy = ref(2, 1, 1);  ///< the lease queue's delivery, on the same channel
};

TEST_F(Leases, HeldForTheLeaseADeliveryIsCopiedAndOnceConfirmedTheCopyStandsForIt) {
  auto tag = handed_over();
  EXPECT_EQ(d.renew_leases(t0 + lease - 1ms), t0 + lease) << "due when the lease ends";
  EXPECT_TRUE(port.leases.empty());
  auto id = renewed();
  EXPECT_EQ(port.leases[0].topic, topic);
  EXPECT_EQ(port.leases[0].body, "job") << "the copy has the message";
  EXPECT_TRUE(port.released.empty()) << "the delivery is held until the broker has the copy";

  d.lease_published(id, true, t0 + lease);
  EXPECT_EQ(port.released, std::vector<broker_ref>{first});
  d.on_lease_copy(topic, copy, id, t0 + lease);
  EXPECT_EQ(d.renewing(), 0u);

  d.ack(1, {tag}, t0 + 2 * lease);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{copy}) << "the host's ack settles the copy";
  EXPECT_EQ(port.deliveries.size(), 1u) << "the host saw one delivery";
  EXPECT_TRUE(port.requeued.empty());
  EXPECT_TRUE(port.dropped.empty());
}

TEST_F(Leases, ACopyIsRenewedInTurnAndEachLeaseCountsFromItsCopy) {
  auto tag = handed_over();
  auto id = renewed();
  d.lease_published(id, true, t0 + lease);
  d.on_lease_copy(topic, copy, id, t0 + lease + 5ms);
  EXPECT_EQ(d.renew_leases(t0 + 2 * lease), t0 + 2 * lease + 5ms);
  d.renew_leases(t0 + 2 * lease + 5ms);
  ASSERT_EQ(port.leases.size(), 2u);
  d.lease_published(port.leases[1].id, true, t0 + 2 * lease + 5ms);
  EXPECT_EQ(port.released, (std::vector<broker_ref>{first, copy}));
  auto second = ref(3, 1, 1);
  d.on_lease_copy(topic, second, port.leases[1].id, t0 + 2 * lease + 6ms);
  d.ack(1, {tag}, t0 + 3 * lease);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{second});
}

TEST_F(Leases, ACopyThatComesBeforeItsConfirmIsTakenAndTheConfirmChangesNothing) {
  auto tag = handed_over();
  auto id = renewed();
  d.on_lease_copy(topic, copy, id, t0 + lease);
  EXPECT_EQ(port.released, std::vector<broker_ref>{first}) << "the copy is proof enough";
  d.lease_published(id, true, t0 + lease);
  EXPECT_EQ(port.released.size(), 1u);
  d.ack(1, {tag}, t0 + lease);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{copy});
}

TEST_F(Leases, AHostAckWhileTheCopyIsPublishedSettlesTheDeliveryAndDropsTheCopyAsItComes) {
  auto tag = handed_over();
  auto id = renewed();
  d.ack(1, {tag}, t0 + lease);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{first});
  EXPECT_EQ(d.renewing(), 1u) << "the copy is awaited";
  d.lease_published(id, true, t0 + lease);
  d.on_lease_copy(topic, copy, id, t0 + lease);
  EXPECT_EQ(port.released, std::vector<broker_ref>{copy}) << "acked without counting as the host's";
  EXPECT_TRUE(port.dropped.empty()) << "not returned to the queue: it was handled";
  EXPECT_EQ(d.renewing(), 0u);
}

TEST_F(Leases, AHostThatGivesAMovedDeliveryBackSendsItsCopyToThePoolsQueue) {
  auto tag = handed_over();
  auto id = renewed();
  d.lease_published(id, true, t0 + lease);
  d.nack(1, {tag}, true, t0 + lease);
  EXPECT_TRUE(port.requeued.empty()) << "the old delivery was acked already";
  d.on_lease_copy(topic, copy, id, t0 + lease);
  EXPECT_EQ(port.dropped, std::vector<broker_ref>{copy})
      << "rejected without requeue: the lease queue dead-letters it to the pool's queue";
}

TEST_F(Leases, AHeldCopyThatTheHostDeadLettersIsPublishedToTheDeadLetterQueue) {
  auto tag = handed_over();
  auto id = renewed();
  d.lease_published(id, true, t0 + lease);
  d.on_lease_copy(topic, copy, id, t0 + lease);
  d.nack(1, {tag}, false, t0 + lease);
  ASSERT_EQ(port.dead_copies.size(), 1u);
  EXPECT_EQ(port.dead_copies[0].topic, topic);
  EXPECT_EQ(port.dead_copies[0].body, "job");
  EXPECT_EQ(port.dead_copies[0].ref, copy);
  EXPECT_TRUE(port.dropped.empty()) << "not back to the pool's queue, where its lease queue would send it";
}

TEST_F(Leases, ARefusedCopyLeavesTheDeliveryHeldAndIsTriedAgainASecondLater) {
  auto tag = handed_over();
  auto id = renewed();
  d.lease_published(id, false, t0 + lease);
  EXPECT_TRUE(port.released.empty());
  EXPECT_EQ(d.renew_leases(t0 + lease + 10ms), t0 + lease + 1000ms);
  d.renew_leases(t0 + lease + 1000ms);
  ASSERT_EQ(port.leases.size(), 2u);
  EXPECT_EQ(port.leases[1].id, id);
  d.ack(1, {tag}, t0 + lease + 1000ms);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{first}) << "the old delivery still stood for it";
}

TEST_F(Leases, ADeliveryWaitingForCreditIsRenewedAndHandedOverWithItsCopy) {
  d.pull(1, topic, delivery_mode::at_least_once, 0, t0);
  d.on_delivery(topic, first, false, "waits", {}, t0);
  auto id = renewed();
  EXPECT_EQ(port.leases[0].body, "waits");
  d.lease_published(id, true, t0 + lease);
  d.on_lease_copy(topic, copy, id, t0 + lease);
  d.pull(1, topic, delivery_mode::at_least_once, 1, t0 + lease);
  ASSERT_EQ(port.deliveries.size(), 1u);
  EXPECT_EQ(port.deliveries[0].body, "waits");
  d.ack(1, {port.deliveries[0].tag}, t0 + lease);
  EXPECT_EQ(port.acked, std::vector<broker_ref>{copy});
}

TEST_F(Leases, AnAtMostOnceDeliveryWaitingForCreditIsAckedEarlyAndNotCopied) {
  d.pull(1, topic, delivery_mode::at_most_once, 0, t0);
  d.on_delivery(topic, first, false, "waits", {}, t0);
  d.renew_leases(t0 + lease);
  EXPECT_TRUE(port.leases.empty());
  EXPECT_EQ(port.released, std::vector<broker_ref>{first});
  d.renew_leases(t0 + 3 * lease);
  EXPECT_EQ(port.released.size(), 1u) << "once";
  d.pull(1, topic, delivery_mode::at_most_once, 1, t0 + 3 * lease);
  ASSERT_EQ(port.deliveries.size(), 1u);
  for (auto& r : port.acked) EXPECT_EQ(r, broker_ref{}) << "nothing real is acked twice";
}

TEST_F(Leases, ACopyOfADeliveryVoidedSinceGoesBackToThePoolsQueueAndIsNotAwaitedAnyMore) {
  handed_over();
  auto id = renewed();
  d.lease_published(id, true, t0 + lease);
  d.on_consumer_lost(topic);  // the channel closed: its deliveries are void
  EXPECT_EQ(d.renewing(), 0u);
  d.on_lease_copy(topic, copy, id, t0 + lease);
  EXPECT_EQ(port.dropped, std::vector<broker_ref>{copy});
}

TEST_F(Leases, ATopicWithACopyStillAwaitedDoesNotGoIdle) {
  auto tag = handed_over();
  auto id = renewed();
  d.lease_published(id, true, t0 + lease);
  d.ack(1, {tag}, t0 + lease);
  d.cancel(1, topic, t0 + lease);
  d.expire_idle(t0 + lease + 20000ms);
  EXPECT_TRUE(port.stopped.empty()) << "closing now would return the copy to the lease queue";
  d.on_lease_copy(topic, copy, id, t0 + lease + 20000ms);
  d.expire_idle(t0 + lease + 40000ms);
  EXPECT_EQ(port.stopped, std::vector<std::string>{topic});
}

TEST_F(Leases, WithoutALeaseNothingIsEverRenewed) {
  dispatcher plain{port, 10000ms};
  plain.pull(1, topic, delivery_mode::at_least_once, 1, t0);
  plain.on_delivery(topic, first, false, "job", {}, t0);
  EXPECT_EQ(plain.renew_leases(t0 + 24h), dispatcher::clock::time_point::max());
  EXPECT_TRUE(port.leases.empty());
  EXPECT_TRUE(port.released.empty());
}

}  // namespace
}  // namespace dde::mqs
