// dde-mqs against a real RabbitMQ: broker consumers per host and per worker, and what a host leaves.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "mqs_rmq_support.hpp"
#include "prometheus_text.hpp"
#include "tcp_proxy.hpp"

namespace dde::mqs::test {
namespace {

TEST(MqsBroker, AConsumerWhoseConnectionStopsForwardingIsFoundStalledReportedAndConsumedAfresh) {
  auto& broker = shared_broker();
  // Two ways to the one broker: through a proxy that will stop passing what the broker sends (a
  // frozen node holds the connection open just so), and directly. A topic starts at the node its
  // name picks: this one the proxy.
  dde::test::tcp_proxy proxy(broker.port());
  std::string topic;
  do topic = unique_topic("stall");
  while (std::hash<std::string>{}(topic) % 2 != 0);
  mqs_process mqs(broker, {"--broker",
                           "amqp://guest@127.0.0.1:" + std::to_string(proxy.port()) +
                               ",127.0.0.1:" + std::to_string(broker.port()) + "/",
                           "--stall-timeout-ms", "2000"});
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  auto_ack(c);
  c.pull(topic, "at-least-once", 100);
  ASSERT_TRUE(dde::test::wait_until([&] { return broker.queue_consumers(topic).value_or(0) == 1; }, 20s))
      << mqs.log();
  broker.publish(topic, {"before 1", "before 2"});
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") == 2; }, 20s)) << mqs.log();

  proxy.stall(true);
  broker.publish(topic, {"after 1", "after 2", "after 3"});
  const auto health_url = "http://127.0.0.1:" + std::to_string(mqs.port()) + "/health";
  net::http_result health;
  ASSERT_TRUE(dde::test::wait_until(
      [&] {
        health = net::http_fetch("GET", health_url);
        return health.body.find("degraded") != std::string::npos;
      },
      30s, 50ms))
      << health.body << mqs.log();
  EXPECT_EQ(health.status, 200) << "degraded, still serving";
  EXPECT_NE(health.body.find(topic + " for "), std::string::npos) << health.body;
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 5; }, 30s)) << mqs.log();
  EXPECT_EQ(bodies_of(c.records("deliver")),
            (std::set<std::string>{"before 1", "before 2", "after 1", "after 2", "after 3"}));
  EXPECT_NE(mqs.log().find("consumer of " + topic + " got nothing for "), std::string::npos) << mqs.log();
  auto metrics = net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(mqs.port()) + "/metrics");
  EXPECT_EQ(
      dde::test::parse_prometheus(metrics.body).value("dde_mqs_consumer_stalls_total", {{"pool", topic}}), 1)
      << metrics.body;
  EXPECT_TRUE(dde::test::wait_until(
      [&] { return net::http_fetch("GET", health_url).body.find("\"ready\"") != std::string::npos; }, 30s))
      << "ready again once the topic is consumed afresh and a limit passed";
  proxy.stall(false);
  c.close();
  mqs.stop();
  delete_topic(broker, topic);
}

TEST(MqsBroker, AConsumerTheBrokerCancelsIsConsumedAgainAndItsTopicDeliversAsBefore) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {});
  auto topic = unique_topic("cancelled");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.pull(topic, "at-most-once", 100);
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic).value_or(0) == 1; }, 20s)) << mqs.log();
  broker.publish(topic, {"before"});
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") == 1; }, 20s)) << mqs.log();
  // Deleting the queue makes the broker send basic.cancel to its consumer (RabbitMQ's consumer
  // cancel notification), on a channel and a connection that stay open.
  broker.delete_queue(topic);
  ASSERT_TRUE(wait_until([&] { return broker.queue_consumers(topic).value_or(0) == 1; }, 20s))
      << "the queue declared and consumed again\n"
      << mqs.log();
  broker.publish(topic, {"after"});
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") == 2; }, 20s)) << mqs.log();
  EXPECT_EQ(bodies_of(c.records("deliver")), (std::set<std::string>{"before", "after"}));
  EXPECT_NE(mqs.log().find("consumer of " + topic + " lost: cancelled by the broker"), std::string::npos)
      << mqs.log();
  c.close();
  mqs.stop();
  delete_topic(broker, topic);
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
    ASSERT_TRUE(
        wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(3); }, 20s));
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
      << all.size() << " of " << n << "\n"
      << mqs.log();
  ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(0); }, 20s));
  // c's consumer was cancelled (a quorum queue counts a cancelled consumer until what it delivered
  // is settled: by now it is).
  ASSERT_TRUE(
      wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(2); }, 20s))
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
  a.send_record(
      {{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 20}, {"consumers", 3}});
  ASSERT_TRUE(a.wait_for([&] { return a.count("deliver") >= 6; }, 20s)) << mqs.log();
  ASSERT_TRUE(
      wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(3); }, 20s));
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(14));
  EXPECT_EQ(a.count("deliver"), 6u);
  // GET /topics reports the same consumers; "xnames" is another parameter, not "names".
  auto topics = net::http_fetch(
      "GET", "http://127.0.0.1:" + std::to_string(mqs.port()) + "/topics?xnames=nothing&names=" + topic);
  ASSERT_EQ(topics.status, 200) << topics.error;
  auto stats = nlohmann::json::parse(topics.body).at("topics");
  EXPECT_EQ(stats.size(), 1u) << stats.dump();
  EXPECT_EQ(stats[topic].value("queueConsumers", 0), 3) << stats.dump();
  EXPECT_EQ(stats[topic].value("consumers", 0), 3) << stats.dump();
  // Scaled down to one worker: the two consumers go once no delivery came for a while (their
  // windows are full: none comes), then the acks make room for prefetch 2 again, on one consumer
  // (the broker counts a cancelled consumer until what it delivered is settled).
  a.send_record(
      {{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 1}, {"consumers", 1}});
  ASSERT_TRUE(wait_until([&] { return mqs_consumers(mqs, topic) == 1; }, 20s)) << mqs.log();
  a.ack(tags_of(a.records("deliver")));
  ASSERT_TRUE(
      wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(1); }, 20s))
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
  // The queue exists, leader elected, before the stream: a fresh quorum queue nacks publishes while
  // it elects its leader (longer on a loaded machine), and the MQS's resent copies come flagged
  // redelivered, which is not what this test counts.
  broker.declare_queue(topic, true);
  ASSERT_TRUE(broker.wait_quorum_queues_registered());
  mqs_client a(mqs.port()), producer(mqs.port());
  ASSERT_TRUE(a.hello("a"));
  ASSERT_TRUE(producer.hello("p"));
  constexpr int n = 4000;
  auto_ack(a);
  a.send_record(
      {{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", n}, {"consumers", 4}});
  // Published as it is consumed (about 4,000 a second), so deliveries are on their way all along.
  std::thread feed([&] {
    for (int i = 1; i <= n; ++i) {
      producer.enqueue(topic, "at-least-once", i, "m" + std::to_string(i));
      if (i % 20 == 0) std::this_thread::sleep_for(5ms);  // pacing, not synchronisation
    }
  });
  bool scaled = a.wait_for([&] { return a.count("deliver") >= n / 4; }, 30s);
  // The host's pool went from four workers to one, mid-stream.
  a.send_record(
      {{"action", "pull"}, {"topic", topic}, {"mode", "at-least-once"}, {"credit", 1}, {"consumers", 1}});
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
  ASSERT_TRUE(
      wait_until([&] { return broker.queue_consumers(topic) == std::optional<std::uint32_t>(1); }, 20s))
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

}  // namespace
}  // namespace dde::mqs::test
