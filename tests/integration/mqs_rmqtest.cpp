// dde-mqs against a real RabbitMQ: a real dde-mqs process, driven over WebSocket by mqs_client.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "dde/names.hpp"
#include "dde/net/http_client.hpp"
#include "dde_test.hpp"
#include "mqs_client.hpp"
#include "mqs_process.hpp"
#include "mqs_rmq_support.hpp"
#include "prometheus_text.hpp"
#include "tcp_proxy.hpp"

namespace dde::mqs::test {
namespace {

std::uint64_t wall_clock_us() {
  return std::uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
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
  // A UUID id travels compacted on the broker and a stamp as its timestamp (mqs/src/broker_props.hpp):
  // both come back as they went, a plain id too.
  const nlohmann::json props = {{"messageId", dde::new_uuid()},
                                {"appId", "sys/producer"},
                                {"contentType", "application/octet-stream"},
                                {"headers", {{"replyTo", "sys/r"}, {"toWorker", "w \"1\""}}}};
  // The same for a host that reads binary deliver headers (mqs/PROTOCOL.md *Binary deliver*).
  for (bool binary : {false, true})
    for (auto mode : {"at-least-once", "at-most-once"}) {
      SCOPED_TRACE(std::string(mode) + (binary ? ", binary deliver" : ", JSON deliver"));
      mqs_client c(mqs.port());
      ASSERT_TRUE(c.hello("test", 10s, binary));
      EXPECT_EQ(c.records("welcome").at(0).header.value("deliver", "json"), binary ? "binary" : "json");
      auto q = topic + (mode[3] == 'l' ? "l" : "m") + (binary ? "b" : "j");
      auto plain_id = props;
      plain_id["messageId"] = "m-1";
      const auto sent_us = wall_clock_us();
      c.send_record({{"action", "enqueue"}, {"topic", q}, {"mode", mode}, {"seq", 1}, {"props", props}},
                    "payload");
      c.send_record({{"action", "enqueue"}, {"topic", q}, {"mode", mode}, {"seq", 2}}, "bare");
      c.send_record({{"action", "enqueue"}, {"topic", q}, {"mode", mode}, {"seq", 3}, {"props", plain_id}},
                    "plain");
      ASSERT_TRUE(wait_until([&] { return broker.queue_depth(q) == std::optional<std::uint32_t>(3); }, 30s))
          << mqs.log();
      const auto queued_us = wall_clock_us();
      auto before = c.count("deliver");
      auto_ack(c);  // prefetch 1: the second delivery needs the first one's ack
      c.pull(q, mode, 3);
      ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= before + 3; }, 30s)) << mqs.log();
      auto all = c.records("deliver");
      ASSERT_EQ(all.size(), before + 3);
      std::vector<wire::record> got(all.begin() + std::ptrdiff_t(before), all.end());
      for (auto& d : got) EXPECT_EQ(d.header.value("binary", false), binary) << d.header.dump();
      EXPECT_EQ(got[0].header.at("props"), props);
      EXPECT_EQ(got[0].body, "payload");
      // The MQS's publish stamp: µs on its wall clock, between the enqueue and the message in the queue.
      const auto published = got[0].header.value("published", std::uint64_t(0));
      EXPECT_GE(published, sent_us) << got[0].header.dump();
      EXPECT_LE(published, queued_us) << got[0].header.dump();
      EXPECT_FALSE(got[1].header.contains("props")) << got[1].header.dump();
      EXPECT_EQ(got[1].body, "bare");
      EXPECT_EQ(got[2].header.at("props"), plain_id);
      EXPECT_EQ(got[2].body, "plain");
      ASSERT_TRUE(wait_until([&] { return broker.queue_depth(q) == std::optional<std::uint32_t>(0); }, 30s));
    }
  // Props the broker cannot carry are refused, by seq, before anything is published.
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.send_record({{"action", "enqueue"},
                 {"topic", topic},
                 {"mode", "at-least-once"},
                 {"seq", 3},
                 {"props", {{"appId", 5}}}},
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
      wire::append_record(
          batch, {{"action", "pull"}, {"topic", fresh.back()}, {"mode", "at-least-once"}, {"credit", 1}});
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
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= std::size_t(held) + fresh.size(); }, 120s))
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
  ASSERT_TRUE(wait_until(
      [&] { return mqs.log().find("closing the idle dequeuer of " + topic) != std::string::npos; }, 20s))
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

TEST(MqsBroker, HostsAreStillServedWhileTheDequeuerWaitsOnABrokerGoneSilent) {
  // The dequeuers' loop runs on the WebSocket side's io_context: while it waits in a broker RPC (a
  // basic.consume for a host's second worker, on a link the broker no longer answers) another thread
  // joins (--threads 2) and hosts are still welcomed. With --threads 1 this hello would wait for the
  // RPC's timeout (15 s).
  auto& broker = shared_broker();
  dde::test::tcp_proxy proxy(broker.port());
  mqs_process mqs(broker, {"--broker-port", std::to_string(proxy.port()), "--threads", "2"});
  auto topic = unique_topic("stuck");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.enqueue(topic, "at-most-once", std::nullopt, "before");
  c.pull(topic, "at-most-once", 10, 1);
  ASSERT_TRUE(c.wait_for([&] { return c.count("deliver") >= 1; }, 20s)) << mqs.log();
  proxy.stall(true);
  c.pull(topic, "at-most-once", 10, 2);  // the dequeuer adds a broker consumer: an RPC with no answer
  // The pull reaches the loop, which blocks in the RPC; a host that comes now is welcomed anyway.
  const std::string adding = "adding broker consumer 2 of 2 to " + topic;
  ASSERT_TRUE(wait_until([&] { return mqs.log().find(adding) != std::string::npos; }, 10s)) << mqs.log();
  auto t0 = std::chrono::steady_clock::now();
  mqs_client late(mqs.port());  // connects (the WebSocket handshake) before it returns
  EXPECT_TRUE(late.hello("late", 3s)) << mqs.log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "the late host waited for the dequeuer's RPC\n"
                                                       << mqs.log();
  late.close();
  proxy.stall(false);
  c.enqueue(topic, "at-most-once", std::nullopt, "after");
  EXPECT_TRUE(c.wait_for([&] { return c.count("deliver") >= 2; }, 40s)) << mqs.log();
  c.close();
  mqs.stop();
  broker.delete_queue(topic);
}

TEST(MqsBroker, HostsAreStillServedWhileTheBrokerBlocksPublishing) {
  // The enqueuer's loop runs on the WebSocket side's io_context too, and never waits for room in the
  // broker's socket: with a single thread (--threads 1, no helper to join), a broker that blocks
  // publishers (a memory alarm) while megabytes wait to be written stops no host from being served.
  // Once the alarm clears, every message is confirmed.
  rabbitmq_node broker("mqs-blocked");
  broker.start();
  mqs_process mqs(broker, {"--threads", "1"});
  auto topic = unique_topic("blocked");
  mqs_client c(mqs.port());
  ASSERT_TRUE(c.hello());
  c.enqueue(topic, "at-least-once", 1, "before");  // connected, the queue declared
  ASSERT_TRUE(c.wait_for([&] { return c.confirmed_seqs().size() == 1; }, 20s)) << mqs.log();
  ASSERT_TRUE(broker.set_memory_watermark(0));
  const std::string big(128 * 1024, 'x');
  constexpr int n = 200;  // 25 MB: more than the loopback socket's buffers take
  for (int seq = 2; seq <= n + 1; ++seq) c.enqueue(topic, "at-least-once", std::uint64_t(seq), big);
  const auto metrics_url = "http://127.0.0.1:" + std::to_string(mqs.port()) + "/metrics";
  auto unwritten = [&] {
    auto r = net::http_fetch("GET", metrics_url);
    return r.status == 200
               ? dde::test::parse_prometheus(r.body).value("dde_mqs_publish_unwritten_bytes").value_or(0)
               : -1.0;
  };
  ASSERT_TRUE(wait_until([&] { return unwritten() > 0; }, 30s)) << "the broker's socket never filled\n"
                                                                << mqs.log();
  auto t0 = std::chrono::steady_clock::now();
  mqs_client late(mqs.port());
  EXPECT_TRUE(late.hello("late", 3s)) << mqs.log();
  EXPECT_EQ(net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(mqs.port()) + "/health").status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s) << "a host waited for the broker to read\n"
                                                       << mqs.log();
  EXPECT_GT(unwritten(), 0) << "the broker read while blocked: the hello above proves nothing";
  late.close();
  ASSERT_TRUE(broker.set_memory_watermark(0.4));
  EXPECT_TRUE(c.wait_for(
      [&] {
        auto s = c.confirmed_seqs();
        return std::set<std::uint64_t>(s.begin(), s.end()).size() == std::size_t(n) + 1;
      },
      60s))
      << mqs.log();
  EXPECT_EQ(broker.queue_depth(topic), std::optional<std::uint32_t>(n + 1));
  EXPECT_EQ(unwritten(), 0);
  c.close();
  mqs.stop();
}

}  // namespace
}  // namespace dde::mqs::test
