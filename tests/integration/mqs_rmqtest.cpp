// dde-mqs against a real RabbitMQ: a real dde-mqs process, driven over WebSocket by mqs_client.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <sstream>
#include <set>
#include <thread>
#include <vector>

#include <fstream>

#include "dde/net/http_client.hpp"
#include "dde_test.hpp"
#include "tcp_proxy.hpp"
#include "mqs_client.hpp"
#include "mqs_process.hpp"

namespace dde::mqs::test {
namespace {

using dde::test::rabbitmq_node;
using dde::test::shared_broker;
using dde::test::wait_until;

std::vector<std::uint64_t> tags_of(const std::vector<wire::record>& deliveries) {
  std::vector<std::uint64_t> out;
  for (auto& d : deliveries) out.push_back(d.header.at("tag").get<std::uint64_t>());
  return out;
}

std::set<std::string> bodies_of(const std::vector<wire::record>& deliveries) {
  std::set<std::string> out;
  for (auto& d : deliveries) out.insert(d.body);
  return out;
}

/// Enqueues "m1".."mn" to `topic` at-least-once and waits until the broker confirmed them all.
bool enqueue_confirmed(mqs_client& c, const std::string& topic, int n) {
  for (int i = 1; i <= n; ++i) c.enqueue(topic, "at-least-once", i, "m" + std::to_string(i));
  return c.wait_for([&] { return c.confirmed_seqs().size() >= std::size_t(n); }, 20s);
}

/// Stops the MQS (its consumers close: what they held unacked goes back to the queue), expects
/// `ready` messages left in `topic`'s queue, and deletes it.
void stop_and_expect_ready(mqs_process& mqs, rabbitmq_node& broker, const std::string& topic, std::uint32_t ready) {
  EXPECT_EQ(mqs.stop(), 0);
  // The broker returns what a closed channel held asynchronously (a quorum queue's consumer goes
  // through its Raft log): the count is right once it did, not at the moment the MQS exited.
  wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(ready); }, 20s);
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(ready));
  delete_topic(broker, topic);
}

/// The broker consumers the MQS says it holds on `topic` (GET /topics "consumers"), -1 if unknown.
int mqs_consumers(mqs_process& mqs, const std::string& topic) {
  auto r = net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(mqs.port()) + "/topics?names=" + topic);
  if (r.status != 200) return -1;
  return nlohmann::json::parse(r.body).at("topics").at(topic).value("consumers", -1);
}

/// Acks every delivery as it arrives.
void auto_ack(mqs_client& c) {
  c.on_record([&c](const wire::record& r) {
    if (r.header.value("action", "") == "deliver") c.ack({r.header.at("tag").get<std::uint64_t>()});
    return true;
  });
}

TEST(MqsBroker, AHelloIsWelcomedAndAtLeastOnceMessagesAreConfirmedDeliveredAndAckedAway) {
  auto& broker = shared_broker();
  mqs_process mqs(broker);
  auto topic = unique_topic("confirm");
  {
    mqs_client c(mqs.port());
    ASSERT_TRUE(c.hello());
    auto welcome = c.records("welcome").at(0);
    EXPECT_EQ(welcome.header.at("protocol"), wire::protocol_version);
    EXPECT_TRUE(welcome.header.at("mqs").is_string());

    constexpr int n = 300;
    std::string batch;
    for (int i = 1; i <= n; ++i)
      wire::append_record(batch,
                          {{"action", "enqueue"}, {"topic", topic}, {"mode", "at-least-once"}, {"seq", i}},
                          "message " + std::to_string(i));
    c.send(std::move(batch));
    ASSERT_TRUE(c.wait_for([&] { return c.confirmed_seqs().size() >= n; }, 30s)) << mqs.log();
    auto seqs = c.confirmed_seqs();
    EXPECT_EQ(std::set<std::uint64_t>(seqs.begin(), seqs.end()).size(), std::size_t(n));
    EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(n));

    // Prefetch 1: every delivery after the first needs the previous ack to reach the broker.
    auto_ack(c);
    c.pull(topic, "at-least-once", n);
    ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= n; }, 30s)) << mqs.log();
    auto deliveries = c.records("deliver");
    EXPECT_EQ(bodies_of(deliveries).size(), std::size_t(n));
    auto tags = tags_of(deliveries);
    EXPECT_EQ(std::set<std::uint64_t>(tags.begin(), tags.end()).size(), std::size_t(n));
    for (auto& d : deliveries) {
      EXPECT_EQ(d.header.at("topic"), topic);
      EXPECT_FALSE(d.header.at("redelivered").get<bool>());
    }
    c.close();  // after the acks: the MQS has read them once the close handshake is done
  }
  // Stopping the MQS closes its consumer: anything not acked would go back to the queue.
  EXPECT_EQ(mqs.stop(), 0);
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(0));
  EXPECT_EQ(broker.queue_depth("dde.dead." + topic), std::optional<std::uint32_t>(0));
  delete_topic(broker, topic);
}

TEST(MqsBroker, PropsGoToTheBrokerAsAmqpPropertiesAndComeBackWithTheDelivery) {
  auto& broker = shared_broker();
  mqs_process mqs(broker);
  auto topic = unique_topic("props");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  const nlohmann::json props = {{"messageId", "m-1"},
                                {"appId", "sys/producer"},
                                {"contentType", "application/octet-stream"},
                                {"headers", {{"replyTo", "sys/r"}, {"toWorker", "w \"1\""}}}};
  for (auto mode : {"at-least-once", "at-most-once"}) {
    SCOPED_TRACE(mode);
    auto q = topic + (mode[3] == 'l' ? "l" : "m");
    c.send_record({{"action", "enqueue"}, {"topic", q}, {"mode", mode}, {"seq", 1}, {"props", props}}, "payload");
    c.send_record({{"action", "enqueue"}, {"topic", q}, {"mode", mode}, {"seq", 2}}, "bare");
    ASSERT_TRUE(wait_until([&] { return broker.queue_depth(q) == std::optional<std::uint32_t>(2); }, 30s)) << mqs.log();
    auto before = c.count("deliver");
    auto_ack(c);  // prefetch 1: the second delivery needs the first one's ack
    c.pull(q, mode, 2);
    ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= before + 2; }, 30s)) << mqs.log();
    auto all = c.records("deliver");
    ASSERT_EQ(all.size(), before + 2);
    std::vector<wire::record> got(all.begin() + std::ptrdiff_t(before), all.end());
    EXPECT_EQ(got[0].header.at("props"), props);
    EXPECT_EQ(got[0].body, "payload");
    EXPECT_FALSE(got[1].header.contains("props")) << got[1].header.dump();
    EXPECT_EQ(got[1].body, "bare");
    ASSERT_TRUE(wait_until([&] { return broker.queue_depth(q) == std::optional<std::uint32_t>(0); }, 30s));
  }
  // Props the broker cannot carry are refused, by seq, before anything is published.
  c.send_record({{"action", "enqueue"}, {"topic", topic}, {"mode", "at-least-once"}, {"seq", 3}, {"props", {{"appId", 5}}}},
                "x");
  ASSERT_TRUE(c.wait_for([&] { return c.count("reject") >= 1; }, 30s)) << mqs.log();
  auto reject = c.records("reject").at(0);
  EXPECT_EQ(reject.header.at("seqs"), nlohmann::json::array({3}));
  EXPECT_EQ(reject.header.at("error"), "props.appId must be a string");
  EXPECT_EQ(broker.queue_depth(topic).value_or(0), 0u);
}

TEST(MqsBroker, TwoHostsPullingOneTopicShareItAndEachGetsOnlyItsCredit) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "50"});
  auto topic = unique_topic("share");
  auto barrier_a = unique_topic("barrier_a"), barrier_b = unique_topic("barrier_b");
  mqs_client a(mqs.port()), b(mqs.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(b.hello("b"));
  for (int i = 1; i <= 20; ++i) a.enqueue(topic, "at-most-once", std::nullopt, "m" + std::to_string(i));
  a.enqueue(barrier_a, "at-most-once", std::nullopt, "barrier");
  b.enqueue(barrier_b, "at-most-once", std::nullopt, "barrier");
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(20); }, 20s));
  ASSERT_TRUE(
      wait_until([&] { return broker.queue_depth(barrier_b) == std::optional<std::uint32_t>(1); }, 20s));

  a.pull(topic, "at-most-once", 3);
  b.pull(topic, "at-most-once", 5);
  ASSERT_TRUE(a.wait_for([&] { return a.count("deliver") >= 3; }, 20s)) << mqs.log();
  ASSERT_TRUE(b.wait_for([&] { return b.count("deliver") >= 5; }, 20s)) << mqs.log();
  // Every message of the topic now sits in the MQS (prefetch 50): nothing is held back by the broker.
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(0); }, 20s));
  // A delivery from another topic, pulled afterwards, proves the MQS had its chance to over-deliver.
  a.pull(barrier_a, "at-most-once", 1);
  b.pull(barrier_b, "at-most-once", 1);
  ASSERT_TRUE(a.wait_for([&] { return a.count("deliver") >= 4; }, 20s));
  ASSERT_TRUE(b.wait_for([&] { return b.count("deliver") >= 6; }, 20s));
  auto from_a = a.records("deliver"), from_b = b.records("deliver");
  EXPECT_EQ(from_a.size(), 4u);
  EXPECT_EQ(from_b.size(), 6u);
  from_a.pop_back();
  from_b.pop_back();
  auto bodies_a = bodies_of(from_a), bodies_b = bodies_of(from_b);
  for (auto& body : bodies_a) EXPECT_EQ(bodies_b.count(body), 0u) << body << " went to both hosts";

  // More credit: the rest is shared out, still without duplicates.
  a.pull(topic, "at-most-once", 6);
  b.pull(topic, "at-most-once", 6);
  ASSERT_TRUE(wait_until([&] { return a.count("deliver") + b.count("deliver") >= 22; }, 20s));
  auto all_a = a.records("deliver"), all_b = b.records("deliver");
  std::set<std::string> all;
  for (auto& d : all_a)
    if (d.header.at("topic") == topic) all.insert(d.body);
  for (auto& d : all_b)
    if (d.header.at("topic") == topic) all.insert(d.body);
  EXPECT_EQ(all.size(), 20u);
  EXPECT_LE(all_a.size(), 4u + 6u);
  EXPECT_LE(all_b.size(), 6u + 6u);
  for (auto& q : {topic, barrier_a, barrier_b}) broker.delete_queue(q);
}

TEST(MqsBroker, ThePrefetchIsPerHostEachHostPullingATopicHasABrokerConsumerOfItsOwn) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "2"});
  auto topic = unique_topic("per_host");
  mqs_client a(mqs.port()), b(mqs.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(b.hello("b"));
  constexpr int n = 20;
  ASSERT_TRUE(enqueue_confirmed(a, topic, n)) << mqs.log();
  auto delivered = [&](std::initializer_list<mqs_client*> hosts) {
    std::size_t total = 0;
    for (auto* h : hosts) total += h->count("deliver");
    return total;
  };
  {
    mqs_client c(mqs.port());
    ASSERT_TRUE(c.hello("c"));
    // Nobody acks: three hosts with plenty of credit get 3 x prefetch 2 messages, the rest stays
    // ready in the broker (one shared consumer would have let 2 go; no prefetch, all 20).
    for (auto* h : {&a, &b, &c}) h->pull(topic, "at-least-once", 10);
    ASSERT_TRUE(wait_until([&] { return delivered({&a, &b, &c}) >= 6; }, 20s)) << mqs.log();
    ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(3); }, 20s));
    EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(n - 6));
    EXPECT_EQ(delivered({&a, &b, &c}), 6u);
    c.drop();  // leaves without acking: its consumer goes, its deliveries go back to the queue
  }
  // a and b ack what they hold and every delivery from now on: every message arrives, none twice
  // (a requeued one may come again to a or b, redelivered).
  auto_ack(a);
  auto_ack(b);
  a.ack(tags_of(a.records("deliver")));
  b.ack(tags_of(b.records("deliver")));
  a.pull(topic, "at-least-once", n);
  b.pull(topic, "at-least-once", n);
  std::set<std::string> all;
  ASSERT_TRUE(wait_until(
      [&] {
        all = bodies_of(a.records("deliver"));
        for (auto& body : bodies_of(b.records("deliver"))) all.insert(body);
        return all.size() == std::size_t(n);
      },
      20s))
      << all.size() << " of " << n << "\n" << mqs.log();
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(0); }, 20s));
  // c's consumer was cancelled (a quorum queue counts a cancelled consumer until what it delivered
  // is settled: by now it is).
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(2); }, 20s))
      << mqs.log();
  a.close();
  b.close();
  stop_and_expect_ready(mqs, broker, topic, 0);  // every message acked away
}

TEST(MqsBroker, AHostThatTellsItsWorkersGetsTheirPrefetchEach) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "2"});
  auto topic = unique_topic("workers");
  mqs_client a(mqs.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(enqueue_confirmed(a, topic, 20)) << mqs.log();
  a.send_record({{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 20}, {"consumers", 3}});
  ASSERT_TRUE(a.wait_for([&] { return a.count("deliver") >= 6; }, 20s)) << mqs.log();
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(3); }, 20s));
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(14));
  EXPECT_EQ(a.count("deliver"), 6u);
  // GET /topics reports the same consumers; "xnames" is another parameter, not "names".
  auto topics = net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(mqs.port()) +
                                           "/topics?xnames=nothing&names=" + topic);
  ASSERT_EQ(topics.status, 200) << topics.error;
  auto stats = nlohmann::json::parse(topics.body).at("topics");
  EXPECT_EQ(stats.size(), 1u) << stats.dump();
  EXPECT_EQ(stats[topic].value("queueConsumers", 0), 3) << stats.dump();
  EXPECT_EQ(stats[topic].value("consumers", 0), 3) << stats.dump();
  // Scaled down to one worker: the two consumers go once no delivery came for a while (their
  // windows are full: none comes), then the acks make room for prefetch 2 again, on one consumer
  // (the broker counts a cancelled consumer until what it delivered is settled).
  a.send_record({{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 1}, {"consumers", 1}});
  ASSERT_TRUE(wait_until([&] { return mqs_consumers(mqs, topic) == 1; }, 20s)) << mqs.log();
  a.ack(tags_of(a.records("deliver")));
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(1); }, 20s))
      << mqs.log();
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(12); }, 20s));
  EXPECT_EQ(a.count("deliver"), 8u);
  a.close();
  stop_and_expect_ready(mqs, broker, topic, 14);  // the 2 unacked went back
}

TEST(MqsBroker, AHostScalingDownMidStreamGetsNothingBackRedelivered) {
  // A quorum queue gives back to the queue what is on its way to a consumer being cancelled
  // (rabbitmq-server #3729): it would come again marked redelivered, a step nearer its delivery
  // limit. While messages flow, the MQS keeps the consumers a host no longer needs; they go once
  // the stream is quiet.
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "8"});
  auto topic = unique_topic("scale_down");
  mqs_client a(mqs.port()), producer(mqs.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(producer.hello("p"));
  constexpr int n = 4000;
  auto_ack(a);
  a.send_record({{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", n}, {"consumers", 4}});
  // Published as it is consumed (about 4,000 a second), so deliveries are on their way all along.
  std::thread feed([&] {
    for (int i = 1; i <= n; ++i) {
      producer.enqueue(topic, "at-least-once", i, "m" + std::to_string(i));
      if (i % 20 == 0) std::this_thread::sleep_for(5ms);  // pacing, not synchronisation
    }
  });
  bool scaled = a.wait_for([&] { return a.count("deliver") >= n / 4; }, 30s);
  // The host's pool went from four workers to one, mid-stream.
  a.send_record({{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 1}, {"consumers", 1}});
  bool all = a.wait_for([&] { return bodies_of(a.records("deliver")).size() == std::size_t(n); }, 60s);
  feed.join();
  ASSERT_TRUE(scaled) << mqs.log();
  ASSERT_TRUE(all) << a.count("deliver") << " of " << n << "\n" << mqs.log();
  std::size_t redelivered = 0;
  for (auto& d : a.records("deliver")) redelivered += d.header.at("redelivered").get<bool>() ? 1 : 0;
  EXPECT_EQ(redelivered, 0u);
  EXPECT_EQ(a.count("deliver"), std::size_t(n));
  // Quiet now: the three consumers the host no longer needs go.
  ASSERT_TRUE(wait_until([&] { return mqs_consumers(mqs, topic) == 1; }, 20s)) << mqs.log();
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(1); }, 20s))
      << mqs.log();
  a.close();
  stop_and_expect_ready(mqs, broker, topic, 0);
}

TEST(MqsBroker, DeliveriesAHostLeavesUnackedGoToAnotherHostAsRedelivered) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "10"});
  auto topic = unique_topic("requeue");
  mqs_client b(mqs.port());
  ASSERT_TRUE(b.hello("b"));
  {
    mqs_client a(mqs.port());
    ASSERT_TRUE(a.hello("a"));
    ASSERT_TRUE(enqueue_confirmed(a, topic, 5)) << mqs.log();
    a.pull(topic, "at-least-once", 5);
    ASSERT_TRUE(a.wait_for([&] { return a.count("deliver") >= 5; }, 20s)) << mqs.log();
    for (auto& d : a.records("deliver")) EXPECT_FALSE(d.header.at("redelivered").get<bool>());
    a.drop();  // vanishes without acking
  }
  b.pull(topic, "at-least-once", 10);
  ASSERT_TRUE(b.wait_for([&] { return b.count("deliver") >= 5; }, 20s)) << mqs.log();
  auto got = b.records("deliver");
  EXPECT_EQ(got.size(), 5u);
  EXPECT_EQ(bodies_of(got), (std::set<std::string>{"m1", "m2", "m3", "m4", "m5"}));
  for (auto& d : got) EXPECT_TRUE(d.header.at("redelivered").get<bool>());
  b.ack(tags_of(got));
  b.close();
  stop_and_expect_ready(mqs, broker, topic, 0);
}

TEST(MqsBroker, TopicsConsumedAtOnceOnFreshQuorumQueuesNeverCostAnotherTopicItsDeliveries) {
  // RabbitMQ 3.10 may answer basic.consume on a quorum queue still electing its leader with a
  // connection-level 541. Each topic has a broker connection of its own, so that costs at most the
  // fresh topic a retry, never the deliveries another topic has in flight.
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--prefetch", "50"});
  auto established = unique_topic("established");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  constexpr int held = 20;
  for (int i = 1; i <= held; ++i) c.enqueue(established, "at-least-once", i, "m" + std::to_string(i));
  ASSERT_TRUE(c.wait_for([&] { return c.confirmed_seqs().size() >= held; }, 30s)) << mqs.log();
  c.pull(established, "at-least-once", held);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= held; }, 30s)) << mqs.log();

  // Rounds of fresh topics, each pulled (declared and consumed) in one batch, with the
  // established deliveries unacknowledged all along.
  std::vector<std::string> fresh;
  for (int round = 0; round < 3; ++round) {
    std::string batch;
    for (int i = 0; i < 8; ++i) {
      fresh.push_back(unique_topic("fresh" + std::to_string(round) + "_" + std::to_string(i)));
      wire::append_record(batch, {{"action", "pull"}, {"topic", fresh.back()}, {"mode", "at-least-once"}, {"credit", 1}});
    }
    c.send(std::move(batch));
  }
  std::uint64_t seq = 1000;
  for (auto& t : fresh) c.enqueue(t, "at-least-once", seq++, "hello " + t);
  auto deliveries_of = [&](const std::string& topic) {
    std::vector<wire::record> out;
    for (auto& d : c.records("deliver"))
      if (d.header.at("topic") == topic) out.push_back(d);
    return out;
  };
  ASSERT_TRUE(c.wait_for(
      [&] { return c.count("deliver") >= std::size_t(held) + fresh.size(); }, 120s))
      << mqs.log();
  for (auto& t : fresh) EXPECT_EQ(deliveries_of(t).size(), 1u) << t;

  // The established deliveries are still valid: acked, they leave the queue, and none comes back.
  c.ack(tags_of(deliveries_of(established)));
  c.enqueue(established, "at-least-once", 5000, "barrier");
  c.pull(established, "at-least-once", held);
  ASSERT_TRUE(c.wait_for([&] { return bodies_of(deliveries_of(established)).count("barrier") == 1; }, 30s))
      << mqs.log();
  auto got = deliveries_of(established);
  EXPECT_EQ(got.size(), std::size_t(held) + 1);
  for (auto& d : got) EXPECT_FALSE(d.header.at("redelivered").get<bool>()) << d.body;
  EXPECT_EQ(mqs.log().find("consumer of " + established + " lost"), std::string::npos) << mqs.log();
  c.ack({got.back().header.at("tag").get<std::uint64_t>()});
  c.close();
  mqs.stop();
  EXPECT_EQ(broker.queue_depth(established), std::optional<std::uint32_t>(0));
  for (auto& t : fresh) {
    delete_topic(broker, t);
  }
  delete_topic(broker, established);
}

TEST(MqsBroker, AQueueThatExistsWithOtherArgumentsIsUsedAsItIs) {
  auto& broker = shared_broker();
  mqs_process mqs(broker);
  auto topic = unique_topic("existing");
  broker.declare_queue(topic, false);  // durable classic: not what the MQS declares for at-least-once
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  for (int i = 1; i <= 3; ++i) c.enqueue(topic, "at-least-once", i, "m" + std::to_string(i));
  ASSERT_TRUE(c.wait_for([&] { return c.confirmed_seqs().size() >= 3; }, 20s)) << mqs.log();
  auto_ack(c);
  c.pull(topic, "at-least-once", 3);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 3; }, 20s)) << mqs.log();
  EXPECT_EQ(bodies_of(c.records("deliver")), (std::set<std::string>{"m1", "m2", "m3"}));
  EXPECT_TRUE(c.records("error").empty());
  EXPECT_NE(mqs.log().find("exists with other arguments"), std::string::npos);
  c.close();
  mqs.stop();
  delete_topic(broker, topic);
}

TEST(MqsBroker, AWrongPasswordIsReportedWithoutPrintingItWhileHostsAreStillServed) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--password", "not-the-password-42"});
  ASSERT_TRUE(wait_until([&] { return mqs.log().find("ACCESS_REFUSED") != std::string::npos; }, 20s))
      << mqs.log();
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.enqueue(unique_topic("nopass"), "at-least-once", 1, "waits for the broker");
  c.pull(unique_topic("nopass"), "at-most-once", 1);
  // It keeps trying, each wait longer than the one before (doubling, jittered down by up to 20%).
  // The publishing side's attempts, read from its own log lines (the consuming side retries too).
  auto waits = [&] {
    std::vector<long> ms;
    std::istringstream log(mqs.log());
    const std::string mark = "retrying in ";
    for (std::string line; std::getline(log, line);) {
      auto at = line.find(mark);
      if (line.find("[mqs.enqueuer]") != std::string::npos && at != std::string::npos)
        ms.push_back(std::strtol(line.c_str() + at + mark.size(), nullptr, 10));
    }
    return ms;
  };
  ASSERT_TRUE(wait_until([&] { return waits().size() >= 3; }, 20s)) << mqs.log();
  auto seen = waits();
  EXPECT_LT(seen[0], seen[1]) << mqs.log();
  EXPECT_LT(seen[1], seen[2]) << mqs.log();
  EXPECT_TRUE(c.records("error").empty());
  EXPECT_TRUE(c.records("reject").empty());
  EXPECT_EQ(mqs.log().find("not-the-password-42"), std::string::npos);
}

TEST(MqsBroker, AnIdleDequeuerIsClosedAndComesBackWithTheNextPull) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--idle-timeout-ms", "300"});
  auto topic = unique_topic("idle");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.enqueue(topic, "at-most-once", std::nullopt, "first");
  c.pull(topic, "at-most-once", 1);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 1; }, 20s)) << mqs.log();
  // No credit left, nothing unacknowledged: the consumer goes after the idle timeout.
  ASSERT_TRUE(wait_until([&] { return mqs.log().find("closing the idle dequeuer of " + topic) != std::string::npos; },
                         20s))
      << mqs.log();
  c.enqueue(topic, "at-most-once", std::nullopt, "second");
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(1); }, 20s));
  c.pull(topic, "at-most-once", 1);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 2; }, 20s)) << mqs.log();
  EXPECT_EQ(c.records("deliver").at(1).body, "second");
  c.close();
  mqs.stop();
  broker.delete_queue(topic);
}

// The dequeuer reads a broker connection only when poll says it has data, and every link once a
// second whatever poll says: rabbitmq-c checks heartbeats when it reads, so a broker that goes
// silent (here a proxy that stops forwarding what the broker sends) is still noticed.
TEST(MqsBroker, ABrokerGoneSilentIsNoticedByTheHeartbeatAndConsumingResumes) {
  auto& broker = shared_broker();
  dde::test::tcp_proxy proxy(broker.port());
  mqs_process mqs(broker, {"--broker-port", std::to_string(proxy.port()), "--heartbeat", "1"});
  auto topic = unique_topic("silent");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.enqueue(topic, "at-most-once", std::nullopt, "before");
  c.pull(topic, "at-most-once", 10);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 1; }, 20s)) << mqs.log();
  proxy.stall(true);
  // The MQS notices it (heartbeat timeout), not the broker: had the dequeuer stopped reading the
  // silent link it would have stopped sending heartbeats too, and the broker would close it first.
  const std::string lost = "consumer of " + topic + " lost its broker connection";
  ASSERT_TRUE(wait_until([&] { return mqs.log().find(lost) != std::string::npos; }, 30s)) << mqs.log();
  EXPECT_NE(mqs.log().find(lost + ": heartbeat timeout"), std::string::npos) << mqs.log();
  proxy.stall(false);
  c.enqueue(topic, "at-most-once", std::nullopt, "after");
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 2; }, 30s)) << mqs.log();
  EXPECT_EQ(c.records("deliver").at(1).body, "after");
  c.close();
  mqs.stop();
  broker.delete_queue(topic);
}

std::string raw_record(std::string_view header, std::string_view body = {}) {
  std::string out;
  auto put = [&](std::size_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  };
  put(header.size());
  out += header;
  put(body.size());
  out += body;
  return out;
}

bool has_error(mqs_client& c, const std::string& text) {
  for (auto& r : c.records("error"))
    if (r.header.value("error", "").find(text) != std::string::npos) return true;
  return false;
}

TEST(MqsBroker, BadInputGetsErrorRecordsWhileAnotherHostGoesOnUndisturbed) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--max-message", "1024", "--max-frame", "131072"});
  auto topic = unique_topic("good");
  auto bad_topic = unique_topic("bad");

  mqs_client good(mqs.port());
  ASSERT_TRUE(good.hello("good"));
  auto_ack(good);
  good.pull(topic, "at-least-once", 2000);
  std::atomic<bool> done{false};
  std::atomic<int> sent{0};
  std::thread producer([&] {
    while (!done && sent < 2000) {
      int i = ++sent;
      good.enqueue(topic, "at-least-once", i, "good " + std::to_string(i));
      if (i % 100 == 0)
        good.wait_for([&] { return good.confirmed_seqs().size() + 200 >= std::size_t(i); }, 10s);
    }
  });

  mqs_client bad(mqs.port());
  bad.enqueue(bad_topic, "at-least-once", 1, "too early");  // before hello
  ASSERT_TRUE(bad.wait_for([&] { return has_error(bad, "first record must be a hello"); }, 10s));
  EXPECT_EQ(bad.rejected_seqs(), std::vector<std::uint64_t>{1});
  ASSERT_TRUE(bad.hello("bad"));

  std::string batch =
      raw_record("{not json") + raw_record(R"({"action":"frobnicate"})") +
      raw_record(R"({"action":"enqueue","topic":"../x","mode":"at-least-once","seq":2})", "x") +
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once","seq":3})",
                 std::string(2000, 'b')) +
      raw_record(R"({"action":"pull","topic":")" + bad_topic + R"(","mode":"at-least-once","credit":0})") +
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once"})", "x") +
      raw_record(R"({"action":"ack","tags":"all"})") +
      // A good record after the bad ones is still served.
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once","seq":4})",
                 "fine");
  bad.send(batch);
  ASSERT_TRUE(bad.wait_for([&] { return bad.count("error") >= 1 + 7; }, 10s));
  EXPECT_TRUE(has_error(bad, "not valid JSON"));
  EXPECT_TRUE(has_error(bad, "unknown action \"frobnicate\""));
  EXPECT_TRUE(has_error(bad, "invalid topic \"../x\""));
  EXPECT_TRUE(has_error(bad, "exceeds --max-message"));
  EXPECT_TRUE(has_error(bad, "credit 0 is out of range"));
  EXPECT_TRUE(has_error(bad, "needs a \"seq\""));
  EXPECT_TRUE(has_error(bad, "\"tags\" must be an array"));
  for (auto& e : bad.records("error")) EXPECT_TRUE(e.header.contains("record")) << e.header.dump();
  ASSERT_TRUE(bad.wait_for([&] { return bad.confirmed_seqs() == std::vector<std::uint64_t>{4}; }, 10s));
  auto rejected = bad.rejected_seqs();
  EXPECT_EQ(std::set<std::uint64_t>(rejected.begin(), rejected.end()), (std::set<std::uint64_t>{1, 2, 3}));

  bad.send(std::string("\x01\x00", 2));  // truncated batch
  ASSERT_TRUE(bad.wait_for([&] { return has_error(bad, "truncated record"); }, 10s));
  bad.send_text("hello?");
  ASSERT_TRUE(bad.wait_for([&] { return !bad.texts().empty(); }, 10s));
  EXPECT_NE(bad.texts().at(0).find("\"action\":\"error\""), std::string::npos);
  EXPECT_FALSE(bad.closed());

  // Over --max-frame: that connection, and only that one, is closed with 1009.
  bad.send(std::string(200 * 1024, 'z'));
  ASSERT_TRUE(bad.wait_for([&] { return bad.closed(); }, 10s));
  EXPECT_EQ(bad.close_code(), 1009);

  done = true;
  producer.join();
  int n = sent;
  ASSERT_TRUE(good.wait_for([&] { return good.confirmed_seqs().size() >= std::size_t(n); }, 30s))
      << mqs.log();
  ASSERT_TRUE(good.wait_for([&] { return good.count("deliver") >= std::size_t(n); }, 30s)) << mqs.log();
  EXPECT_EQ(bodies_of(good.records("deliver")).size(), std::size_t(n));
  EXPECT_TRUE(good.records("error").empty());
  EXPECT_FALSE(good.closed());

  mqs_client late(mqs.port());  // the MQS still takes new hosts
  EXPECT_TRUE(late.hello("late"));
  good.close();
  mqs.stop();
  for (auto& q : {topic, bad_topic}) {
    delete_topic(broker, q);
  }
}

std::size_t rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  std::size_t kib = 0;
  while (in >> key)
    if (key == "VmRSS:" && in >> kib) break;
  return kib;
}

TEST(MqsBroker, AHostThatDoesNotReadItsSocketGetsNoMoreThanAFrameQueuedAndTheRestWaitsInTheBroker) {
  auto& broker = shared_broker();
  // At-most-once is acked to the broker as it is handed over: without backpressure the MQS would
  // take the whole queue into the stalled host's send queue.
  mqs_process mqs(broker, {"--prefetch", "100", "--max-frame", "1048576", "--max-message", "524288"});
  auto topic = unique_topic("stalled");
  constexpr int n = 20000;
  const std::string body(2048, 'x');
  {
    mqs_client producer(mqs.port());
    ASSERT_TRUE(producer.hello("producer"));
    for (int i = 0; i < n; ++i) producer.enqueue(topic, "at-most-once", std::nullopt, body);
    ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(n); }, 60s))
        << mqs.log();
    producer.close();
  }
  auto before = rss_kib(mqs.pid());
  dde::test::tcp_proxy proxy(mqs.port());
  mqs_client reader(proxy.port());
  ASSERT_TRUE(reader.hello("reader"));
  proxy.stall(true);
  reader.pull(topic, "at-most-once", 65535);
  // The broker's queue shrinks by what fits in socket buffers and one frame, then stops.
  std::uint32_t last = n + 1;
  ASSERT_TRUE(wait_until(
      [&] {
        auto depth = broker.queue_depth(topic).value_or(0);
        bool settled = depth == last;
        last = depth;
        return settled;
      },
      60s, 1000ms));
  EXPECT_GT(last, std::uint32_t(n / 2)) << "the MQS took what the broker should hold";
  EXPECT_LT(rss_kib(mqs.pid()), before + 16 * 1024) << "KiB before: " << before;
  proxy.stall(false);
  ASSERT_TRUE(reader.wait_for([&] { return reader.count("deliver") >= std::size_t(n); }, 120s)) << mqs.log();
  EXPECT_EQ(reader.count("deliver"), std::size_t(n));
  reader.close();
  broker.delete_queue(topic);
}

TEST(MqsBroker, EveryAtLeastOnceEnqueueSurvivesABrokerRestart) {
  rabbitmq_node broker("mqs-restart");
  broker.start();
  // A backlog limit below what the host keeps unconfirmed: during the outage the MQS must stop
  // reading from the host (backpressure) and read again once the broker is back.
  mqs_process mqs(broker, {"--confirm-window", "100", "--prefetch", "100", "--backlog-messages", "200"});
  auto topic = unique_topic("restart");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  auto confirmed = [&] {
    auto s = c.confirmed_seqs();
    return std::set<std::uint64_t>(s.begin(), s.end()).size();
  };

  // The host keeps enqueuing, with at most 300 unconfirmed, until told to finish: so messages are
  // in flight when the broker goes, and more arrive while it is away.
  std::atomic<bool> finish{false};
  std::atomic<int> sent{0};
  std::thread producer([&] {
    for (int i = 1; !finish; ++i) {
      c.enqueue(topic, "at-least-once", i, "payload " + std::to_string(i));
      sent = i;
      if (i % 50 == 0)
        c.wait_for([&] { return finish || c.confirmed_seqs().size() + 300 >= std::size_t(i); }, 120s);
    }
  });
  ASSERT_TRUE(wait_until([&] { return confirmed() >= 1000; }, 60s)) << mqs.log();
  broker.stop();
  ASSERT_TRUE(wait_until([&] { return mqs.log().find("broker connection lost") != std::string::npos; }, 30s));
  int sent_during_outage = sent;
  broker.start();
  ASSERT_TRUE(wait_until([&] { return mqs.log().find("reconnected to broker") != std::string::npos; }, 60s))
      << mqs.log();
  ASSERT_TRUE(wait_until([&] { return confirmed() >= std::size_t(sent_during_outage) + 500; }, 60s))
      << mqs.log();
  finish = true;
  producer.join();
  const std::size_t n = sent;
  ASSERT_TRUE(wait_until([&] { return confirmed() == n; }, 120s)) << mqs.log();
  EXPECT_TRUE(c.rejected_seqs().empty());
  EXPECT_NE(mqs.log().find("pausing reads"), std::string::npos);

  // Count by consuming: every message is in the queue (duplicates are allowed, loss is not).
  mqs_client reader(mqs.port());
  ASSERT_TRUE(reader.hello("reader"));
  auto_ack(reader);
  for (std::size_t credit = 0; credit < n + 2000; credit += 10000)
    reader.pull(topic, "at-least-once", std::uint32_t(std::min<std::size_t>(10000, n + 2000 - credit)));
  ASSERT_TRUE(reader.wait_for([&] { return bodies_of(reader.records("deliver")).size() >= n; }, 120s))
      << mqs.log();
  auto bodies = bodies_of(reader.records("deliver"));
  for (std::size_t i = 1; i <= n; ++i)
    EXPECT_EQ(bodies.count("payload " + std::to_string(i)), 1u) << "lost: payload " << i;
  std::size_t copies = reader.count("deliver");
  reader.close();
  c.close();
  mqs.stop();
  EXPECT_EQ(bodies.size(), n);
  EXPECT_GE(copies, n);
  broker.stop();
}

}  // namespace
}  // namespace dde::mqs::test
