// The top level's parts without a link: the window of enqueues the MQS has not confirmed, the
// outgoing batch with its merged acks and pulls (read back as the MQS reads it), and the pools' table.
#include <gtest/gtest.h>

#include "dde/wire/record.hpp"
#include "outbound.hpp"
#include "pool_sinks.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

std::vector<mqs::request> read_back(const std::string& bytes) {
  auto batch = wire::decode_batch(bytes, 1 << 20);
  EXPECT_TRUE(batch.error.empty()) << batch.error;
  std::vector<mqs::request> out;
  for (auto& r : batch.records) {
    auto parsed = mqs::parse_request(r.header);
    EXPECT_TRUE(parsed.req) << parsed.error;
    if (parsed.req) out.push_back(std::move(*parsed.req));
  }
  return out;
}

TEST(UnconfirmedWindow, HoldsEachAtLeastOnceEnqueueNumberedUntilSettledAndTellsItsCallbackOnce) {
  unconfirmed_window window;
  std::vector<bool> told;
  auto [first, m1] = window.hold({"a.pool", "", "one", [&](bool ok) { told.push_back(ok); }});
  EXPECT_EQ(m1.body, "one");
  auto second = window.hold({"a.pool", "", "two", {}}).first;
  EXPECT_EQ(second, first + 1);
  EXPECT_EQ(window.unconfirmed(), 2u);
  std::vector<std::uint64_t> replayed;
  window.for_each_unconfirmed([&](std::uint64_t seq, const pending_enqueue&) { replayed.push_back(seq); });
  EXPECT_EQ(replayed, (std::vector<std::uint64_t>{first, second}));
  EXPECT_TRUE(window.settle(first, false));
  EXPECT_FALSE(window.settle(first, true)) << "settled once";
  EXPECT_EQ(told, std::vector<bool>{false});
  EXPECT_TRUE(window.settle(second, true));
  EXPECT_EQ(window.unconfirmed(), 0u);
}

TEST(UnconfirmedWindow, KeepsAtMostOnceEnqueuesWhileTheLinkIsDownDroppingTheOldestBeyondItsBacklog) {
  unconfirmed_window window;
  for (std::size_t i = 0; i < unconfirmed_window::max_backlog; ++i)
    ASSERT_TRUE(window.keep({"a.pool", "", std::to_string(i), {}}));
  EXPECT_FALSE(window.keep({"a.pool", "", "newest", {}}));
  auto kept = window.take_backlog();
  EXPECT_EQ(kept.size(), unconfirmed_window::max_backlog);
  EXPECT_EQ(kept.front().body, "1") << "the oldest went";
  EXPECT_EQ(kept.back().body, "newest");
  EXPECT_EQ(window.backlog(), 0u);
}

TEST(OutgoingBatch, MergesAcksIntoOneRecordAndPullsIntoOnePerTopicAfterTheRecordsThatCame) {
  outgoing_batch batch;
  mqs::append(batch.records(), mqs::cancel_request{"gone.pool"});
  batch.ack(3);
  batch.add_pull("a.pool", delivery_mode::at_least_once, 10, 2);
  batch.ack(4);
  batch.add_pull("a.pool", delivery_mode::at_least_once, 5);
  batch.add_pull("b.pool", delivery_mode::at_most_once, 1);
  batch.add_pull("c.pool", delivery_mode::at_most_once, 1);
  batch.drop_pull("c.pool");
  std::vector<std::pair<std::string, std::size_t>> pulled;
  auto bytes =
      batch.take([&](const std::string& topic, std::size_t credit) { pulled.emplace_back(topic, credit); });
  EXPECT_EQ(pulled, (std::vector<std::pair<std::string, std::size_t>>{{"a.pool", 15}, {"b.pool", 1}}));
  auto got = read_back(bytes);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(std::get<mqs::cancel_request>(got[0]).topic, "gone.pool");
  EXPECT_EQ(std::get<mqs::ack_request>(got[1]).tags, (std::vector<std::uint64_t>{3, 4}));
  auto& a = std::get<mqs::pull_request>(got[2]);
  EXPECT_EQ(a.topic, "a.pool");
  EXPECT_EQ(a.credit, 15u);
  EXPECT_EQ(a.consumers, 2u) << "the consumers told stay when a later pull does not tell them";
  EXPECT_EQ(std::get<mqs::pull_request>(got[3]).mode, delivery_mode::at_most_once);
  EXPECT_TRUE(batch.take([](const std::string&, std::size_t) {}).empty()) << "taken: empty";

  batch.ack(5);
  batch.add_pull("a.pool", delivery_mode::at_least_once, 1);
  batch.clear();
  EXPECT_TRUE(batch.take([](const std::string&, std::size_t) {}).empty()) << "cleared: nothing goes";
}

TEST(OutgoingBatch, APartitionedTopicsPullsCarryItsPartitionsUntilItIsForgotten) {
  outgoing_batch batch;
  batch.partition("shop.orders", 16, "customerId");
  batch.add_pull("shop.orders", delivery_mode::at_least_once, 4);
  batch.add_pull("a.pool", delivery_mode::at_least_once, 1);
  auto got = read_back(batch.take([](const std::string&, std::size_t) {}));
  ASSERT_EQ(got.size(), 2u);
  auto& plain = std::get<mqs::pull_request>(got[0]);
  EXPECT_EQ(plain.topic, "a.pool");
  EXPECT_EQ(plain.partitions, 0u);
  auto& part = std::get<mqs::pull_request>(got[1]);
  EXPECT_EQ(part.partitions, 16u);
  EXPECT_EQ(part.key, "customerId");
  batch.clear();  // a reconnect: the pool is still partitioned
  batch.add_pull("shop.orders", delivery_mode::at_least_once, 1);
  got = read_back(batch.take([](const std::string&, std::size_t) {}));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<mqs::pull_request>(got[0]).partitions, 16u);
  batch.partition("shop.orders", 0, {});
  batch.add_pull("shop.orders", delivery_mode::at_least_once, 1);
  got = read_back(batch.take([](const std::string&, std::size_t) {}));
  EXPECT_EQ(std::get<mqs::pull_request>(got[0]).partitions, 0u);
}

struct recording_sink : topic_sink {
  int connected = 0;
  void deliver(std::uint64_t, std::vector<delivery>) override {}
  void deliver_reply(envelope) override {}
  void on_connected() override { ++connected; }
};

TEST(PoolSinks, FindsAPoolWhileItIsThereAndHandsItsPausesUntilItIsDetached) {
  pool_sinks pools;
  auto sink = std::make_shared<recording_sink>();
  pools.attach("a.pool", sink);
  std::vector<std::string> paused;
  pools.set_pause_handler(
      "a.pool", [&](std::chrono::milliseconds ms, const std::string& reason, const std::string& origin) {
        paused.push_back(std::to_string(ms.count()) + " " + reason + " " + origin);
      });
  EXPECT_EQ(pools.find("a.pool"), sink);
  EXPECT_EQ(pools.find("b.pool"), nullptr);
  EXPECT_TRUE(pools.pause("a.pool", 50ms, "429", "mqs/x"));
  EXPECT_FALSE(pools.pause("b.pool", 50ms, "429", "mqs/x"));
  pools.connected();
  EXPECT_EQ(sink->connected, 1);
  pools.detach("a.pool");
  EXPECT_EQ(pools.find("a.pool"), nullptr);
  EXPECT_FALSE(pools.pause("a.pool", 50ms, "429", "mqs/x"));
  EXPECT_EQ(paused, std::vector<std::string>{"50 429 mqs/x"});

  pools.attach("gone.pool", std::make_shared<recording_sink>());
  EXPECT_EQ(pools.find("gone.pool"), nullptr) << "held weakly: a sink gone is a pool gone";
}

TEST(PoolSinks, DepthAnswersGoToTheOldestQuestionOfTheirTopicAndALostLinkFailsTheRest) {
  pool_sinks pools;
  std::vector<std::string> heard;
  auto ask = [&](const std::string& topic, const std::string& who) {
    pools.asked_depth(topic, [&, who](std::uint64_t messages, std::uint64_t, std::string error) {
      heard.push_back(who + ":" + std::to_string(messages) + error);
    });
  };
  ask("a.pool", "first");
  ask("a.pool", "second");
  ask("b.pool", "third");
  pools.answer_depth("a.pool", 7, 1, "");
  pools.answer_depth("c.pool", 1, 1, "");  // nobody asked: dropped
  pools.fail_depths(" link dropped");
  pools.answer_depth("a.pool", 9, 1, "");  // nobody waits any more
  std::sort(heard.begin() + 1, heard.end());
  EXPECT_EQ(heard, (std::vector<std::string>{"first:7", "second:0 link dropped", "third:0 link dropped"}));
}

}  // namespace
}  // namespace dde::host
