// The dispatcher on a partitioned topic: each partition's deliveries go to the one host that owns
// it, in the order they came; a host that disconnects hands what it had to the next owner (no
// broker round trip), one that joins gets its partitions once their owners settled what they had.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "dispatcher.hpp"
#include "mqs_fake_port.hpp"

namespace dde::mqs {
namespace {

using testing::ref;

class PartitionedDispatch : public testing::dispatcher_fixture {
 protected:
  const std::string topic = "shop.orders";

  /// Broker delivery `n` of partition `p` (its broker tag is n, its body "p<p>-<n>").
  void arrive(std::uint32_t p, std::uint64_t n) {
    d.on_delivery(topic, ref(n), false, "p" + std::to_string(p) + "-" + std::to_string(n), {}, t0, p);
  }
  /// The bodies each host was sent, in order.
  std::map<client_id, std::vector<std::string>> by_host() const {
    std::map<client_id, std::vector<std::string>> out;
    for (auto& x : port.deliveries) out[x.client].push_back(x.body);
    return out;
  }
  /// The MQS tags sent to `client` whose body names partition `p`.
  std::vector<std::uint64_t> tags_of(client_id client, std::uint32_t p) const {
    std::vector<std::uint64_t> out;
    for (auto& x : port.deliveries)
      if (x.client == client && x.body.rfind("p" + std::to_string(p) + "-", 0) == 0) out.push_back(x.tag);
    return out;
  }
};

TEST_F(PartitionedDispatch, EachPartitionGoesToOneHostInTheOrderItCame) {
  ASSERT_EQ(d.pull(1, topic, alo, 100, t0, 0, 2), "");
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 2), "");
  EXPECT_EQ(port.started_partitions, (std::vector<std::uint32_t>{2}));
  EXPECT_TRUE(port.consumers.empty());  // one broker consumer per partition, whoever pulls
  EXPECT_EQ(d.partitions_of(1, topic), 1u);
  EXPECT_EQ(d.partitions_of(2, topic), 1u);
  for (std::uint64_t n = 1; n <= 6; ++n) arrive(std::uint32_t(n % 2), n);
  auto sent = by_host();
  ASSERT_EQ(sent.size(), 2u);
  for (auto& [host, bodies] : sent) {
    ASSERT_EQ(bodies.size(), 3u) << "host " << host;
    auto p = bodies[0].substr(0, 3);
    for (auto& b : bodies) EXPECT_EQ(b.substr(0, 3), p) << "host " << host << " got two partitions";
  }
  client_id p0_host = tags_of(1, 0).empty() ? 2 : 1;
  EXPECT_EQ(sent[p0_host], (std::vector<std::string>{"p0-2", "p0-4", "p0-6"}));
}

TEST_F(PartitionedDispatch, APartitionWaitsForItsOwnersCreditNotForAnothers) {
  ASSERT_EQ(d.pull(1, topic, alo, 1, t0, 0, 1), "");
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 1), "");  // owns nothing: one partition, host 1's
  arrive(0, 1);
  arrive(0, 2);
  ASSERT_EQ(port.deliveries.size(), 1u);
  EXPECT_EQ(port.deliveries[0].client, 1u);
  EXPECT_EQ(d.buffered(topic), 1u);
  EXPECT_FALSE(d.starved(topic));  // host 2 holds credit, but what waits is host 1's
  d.ack(1, {port.deliveries[0].tag}, t0);
  EXPECT_EQ(port.acked, (std::vector<broker_ref>{ref(1)}));
  ASSERT_EQ(d.pull(1, topic, alo, 1, t0, 0, 1), "");
  ASSERT_EQ(port.deliveries.size(), 2u);
  EXPECT_EQ(port.deliveries[1].client, 1u);
  EXPECT_EQ(port.deliveries[1].body, "p0-2");
}

TEST_F(PartitionedDispatch, ALostHostsDeliveriesGoFirstToTheNextOwnerAndStillAckTheBrokersCopies) {
  ASSERT_EQ(d.pull(1, topic, alo, 2, t0, 0, 1), "");
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 1), "");
  for (std::uint64_t n = 1; n <= 4; ++n) arrive(0, n);
  ASSERT_EQ(port.deliveries.size(), 2u);   // host 1's credit
  d.ack(1, {port.deliveries[0].tag}, t0);  // p0-1 done
  d.disconnect(1, t0);                     // p0-2 in hand
  EXPECT_TRUE(port.requeued.empty());      // no broker round trip: the MQS still holds it
  ASSERT_EQ(port.deliveries.size(), 5u);
  EXPECT_EQ(port.deliveries[2].client, 2u);
  EXPECT_EQ(port.deliveries[2].body, "p0-2");
  EXPECT_TRUE(port.deliveries[2].redelivered);
  EXPECT_EQ(port.deliveries[3].body, "p0-3");
  EXPECT_FALSE(port.deliveries[3].redelivered);
  EXPECT_EQ(port.deliveries[4].body, "p0-4");
  d.ack(2, {port.deliveries[2].tag, port.deliveries[3].tag, port.deliveries[4].tag}, t0);
  EXPECT_EQ(port.acked, (std::vector<broker_ref>{ref(1), ref(2), ref(3), ref(4)}));
}

TEST_F(PartitionedDispatch, AJoiningHostGetsAPartitionOnlyOnceItsOwnerSettledWhatItHad) {
  ASSERT_EQ(d.pull(1, topic, alo, 100, t0, 0, 2), "");
  arrive(0, 1);
  arrive(1, 2);
  ASSERT_EQ(port.deliveries.size(), 2u);
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 2), "");  // one of the two partitions moves to host 2
  ASSERT_EQ(d.partitions_of(2, topic), 1u);
  arrive(0, 3);
  arrive(1, 4);
  auto to_host2 = [&] {
    int n = 0;
    for (auto& x : port.deliveries) n += x.client == 2;
    return n;
  };
  EXPECT_EQ(to_host2(), 0) << "host 2 was sent a partition host 1 still had in hand";
  // Host 1 settles what it had of both; the moved partition's delivery goes to host 2, in order.
  d.ack(1, {port.deliveries[0].tag, port.deliveries[1].tag}, t0);
  EXPECT_EQ(to_host2(), 1);
  std::string first_to_2;
  for (auto& x : port.deliveries)
    if (x.client == 2) first_to_2 = x.body;
  EXPECT_TRUE(first_to_2 == "p0-3" || first_to_2 == "p1-4") << first_to_2;
}

TEST_F(PartitionedDispatch, AHostThatCancelsStillSettlesWhatItHasThenItsPartitionsMove) {
  ASSERT_EQ(d.pull(1, topic, alo, 100, t0, 0, 1), "");
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 1), "");
  arrive(0, 1);
  ASSERT_EQ(port.deliveries.size(), 1u);
  auto owner = port.deliveries[0].client;
  auto other = owner == 1 ? 2u : 1u;
  d.cancel(owner, topic, t0);
  arrive(0, 2);
  EXPECT_EQ(port.deliveries.size(), 1u);  // drained first
  EXPECT_TRUE(port.requeued.empty());
  d.ack(owner, {port.deliveries[0].tag}, t0);
  EXPECT_EQ(port.acked, (std::vector<broker_ref>{ref(1)}));  // its ack still counts
  ASSERT_EQ(port.deliveries.size(), 2u);
  EXPECT_EQ(port.deliveries[1].client, other);
  EXPECT_EQ(port.deliveries[1].body, "p0-2");
}

TEST_F(PartitionedDispatch, AHostThatCancelledThenDisconnectsHandsWhatItHeldToTheNextOwnerFirst) {
  ASSERT_EQ(d.pull(1, topic, alo, 100, t0, 0, 1), "");
  ASSERT_EQ(d.pull(2, topic, alo, 100, t0, 0, 1), "");
  arrive(0, 1);
  auto owner = port.deliveries[0].client;
  auto other = owner == 1 ? 2u : 1u;
  d.cancel(owner, topic, t0);
  arrive(0, 2);
  d.disconnect(owner, t0);  // never settled p0-1
  EXPECT_TRUE(port.requeued.empty());
  ASSERT_EQ(port.deliveries.size(), 3u);
  EXPECT_EQ(port.deliveries[1].client, other);
  EXPECT_EQ(port.deliveries[1].body, "p0-1");
  EXPECT_TRUE(port.deliveries[1].redelivered);
  EXPECT_EQ(port.deliveries[2].body, "p0-2");
}

TEST_F(PartitionedDispatch, AnAtMostOnceDeliveryLeavesNothingInHandSoItsPartitionMovesAtOnce) {
  ASSERT_EQ(d.pull(1, topic, amo, 100, t0, 0, 1), "");
  arrive(0, 1);
  ASSERT_EQ(port.deliveries.size(), 1u);
  EXPECT_EQ(port.acked, (std::vector<broker_ref>{ref(1)}));  // acked as handed over
  d.cancel(1, topic, t0);
  ASSERT_EQ(d.pull(2, topic, amo, 100, t0, 0, 1), "");
  arrive(0, 2);
  ASSERT_EQ(port.deliveries.size(), 2u);
  EXPECT_EQ(port.deliveries[1].client, 2u);
}

TEST_F(PartitionedDispatch, APullWithAnotherPartitionCountIsRefused) {
  ASSERT_EQ(d.pull(1, topic, alo, 1, t0, 0, 4), "");
  EXPECT_EQ(d.pull(2, topic, alo, 1, t0, 0, 8),
            "topic shop.orders is consumed with 4 partitions by this MQS; a pull with 8 is refused");
  EXPECT_EQ(d.pull(2, topic, alo, 1, t0),
            "topic shop.orders is consumed with 4 partitions by this MQS; a pull with 0 is refused");
  EXPECT_EQ(d.partitions_of(2, topic), 0u);
}

TEST_F(PartitionedDispatch, ALostChannelVoidsWhatWaitsAndWhatIsInHand) {
  ASSERT_EQ(d.pull(1, topic, alo, 1, t0, 0, 1), "");
  arrive(0, 1);
  arrive(0, 2);
  EXPECT_EQ(d.buffered(topic), 1u);
  d.on_consumer_lost(topic);
  EXPECT_EQ(d.buffered(topic), 0u);
  EXPECT_EQ(d.unacked(1), 0u);
  d.ack(1, {port.deliveries[0].tag}, t0);  // void: the broker redelivers it
  EXPECT_TRUE(port.acked.empty());
  arrive(0, 7);  // the redelivery, on the new channel
  ASSERT_EQ(d.pull(1, topic, alo, 1, t0, 0, 1), "");
  EXPECT_EQ(port.deliveries.back().body, "p0-7");
}

}  // namespace
}  // namespace dde::mqs
