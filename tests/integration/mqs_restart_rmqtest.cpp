// dde-mqs against a real RabbitMQ that restarts: every at-least-once enqueue survives it.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "mqs_rmq_support.hpp"

namespace dde::mqs::test {
namespace {

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
