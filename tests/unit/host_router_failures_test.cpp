// The router's failures without processes or a broker (the fixture of host_router_test.cpp): a worker
// that throws, restarts and their limits, dead letters, delayed retries.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "dde/protocol/pool_spec.hpp"
#include "mqs_link.hpp"
#include "ops_server.hpp"
#include "router.hpp"
#include "router_fixture.hpp"

namespace dde::host {
namespace {

using testing::fake_link;
using testing::RouterTest;

using namespace std::chrono_literals;

TEST_F(RouterTest, AMessageTheWorkerThrowsOnGoesBackToTheQueueAndTheWorkerIsRestarted) {
  auto r = start_pool(1, {{"supervision", {{"strategy", "restart"}, {"maxRestarts", 5}}}}, {5});
  deliver(11, 5);
  EXPECT_EQ(link->nacks, (std::vector<std::pair<std::uint64_t, bool>>{{11, true}}));
  EXPECT_TRUE(link->acks.empty());
  deliver(12, 6);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 12}}))
      << "the restarted worker handles the next message";
  auto d = describe(*r);
  EXPECT_EQ(d["stats"]["restarts"], 1);
  EXPECT_EQ(d["stats"]["failed"], 1);
}

TEST_F(RouterTest, WithTheDeadLetterOptionAFailedMessageIsNotRequeued) {
  auto r = start_pool(1, {{"supervision", {{"strategy", "resume"}, {"failedMessage", "dead-letter"}}}}, {5});
  deliver(11, 5);
  EXPECT_EQ(link->nacks, (std::vector<std::pair<std::uint64_t, bool>>{{11, false}}));
  EXPECT_EQ(describe(*r)["governance"]["deadLettered"], 1) << "counted with the pool's other dead letters";
}

TEST_F(RouterTest, ThePoolStopsAfterMaxRestartsWithinTheWindowAndStopsConsuming) {
  auto r = start_pool(
      1, {{"supervision", {{"strategy", "restart"}, {"maxRestarts", 2}, {"withinMs", 60000}}}}, {5, 6, 7});
  deliver(1, 5);
  deliver(2, 6);
  EXPECT_TRUE(link->cancelled.empty()) << "two restarts are allowed";
  deliver(3, 7);
  EXPECT_EQ(link->cancelled, std::vector<std::string>{"unit.pool"});
  auto d = describe(*r);
  EXPECT_EQ(d["poolState"].get<std::string>().rfind("stopped: 2 restarts within 60000 ms", 0), 0u)
      << d.dump();
  EXPECT_EQ(d["stats"]["restarts"], 2);
}

TEST_F(RouterTest, AMessageThatFailedMaxFailuresTimesIsDeadLetteredWithItsFailureAndThePoolGoesOn) {
  auto r = start_pool(1, {{"credits", 4}, {"supervision", {{"maxFailures", 3}}}}, {5});
  deliver(1, 5);
  deliver(2, 5, true);
  deliver(3, 5, true);
  EXPECT_EQ(link->nacks, (std::vector<std::pair<std::uint64_t, bool>>{{1, true}, {2, true}, {3, true}}));
  EXPECT_TRUE(link->enqueued.empty()) << "three failures, each back to the queue";
  deliver(4, 5, true);
  EXPECT_EQ(link->nacks.size(), 3u) << "not handed to a worker a fourth time";
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 4}}));
  ASSERT_EQ(link->enqueued.size(), 1u);
  EXPECT_EQ(link->enqueued[0].first, "dde.dead.unit.pool");
  auto dead = nlohmann::json::parse(link->enqueued[0].second);
  EXPECT_EQ(dead["deadLetter"]["attempts"], 3) << dead.dump();
  EXPECT_EQ(
      dead["deadLetter"]["reason"],
      "failed 3 times (supervision.maxFailures 3); last failure: on_receive threw: asked to throw on 5");
  EXPECT_EQ(dead["body"], (nlohmann::json{{"seq", 5}})) << "the whole message, as it came";
  deliver(5, 6);
  EXPECT_EQ(link->acks.back(), (std::pair<std::uint64_t, std::uint64_t>{1, 5})) << "the pool goes on";
  auto d = describe(*r);
  EXPECT_EQ(d["poolState"], "running");
  EXPECT_EQ(d["governance"]["deadLettered"], 1);
  EXPECT_EQ(d["stats"]["failed"], 3);
  EXPECT_EQ(d["stats"]["restarts"], 3);
  // A window of 4 gives credit back 2 at a time while some is outstanding: of the 5 deliveries'
  // credits, 4 were asked for again (the dead-lettered one's too) and 1 waits for the next.
  EXPECT_EQ(link->credit_asked(), 4u + 4u) << "every message's credit came back, the dead-lettered one's too";
}

TEST_F(RouterTest, WithRetryDelaysAFailedMessageWaitsInTheDelayQueueOfEachDelayThenIsDeadLettered) {
  auto r = start_pool(1, {{"credits", 4}, {"retry", {{"delays", {1000, 5000}}}}}, {5});
  deliver(1, 5);
  EXPECT_TRUE(link->nacks.empty()) << "not back to the queue at once";
  EXPECT_TRUE(link->acks.empty()) << "acked only once the broker has the delayed copy";
  ASSERT_EQ(link->held.size(), 1u);
  EXPECT_EQ(link->held[0].topic, "dde.delay-1000.unit.pool");
  auto props = nlohmann::json::parse(link->held[0].props);
  EXPECT_EQ(props["headers"]["attempt"], "1");
  EXPECT_EQ(props["messageId"], "m5") << "the same message, not a new one";
  EXPECT_EQ(nlohmann::json::parse(link->held[0].body), (nlohmann::json{{"seq", 5}}));
  link->held[0].settled(true);
  settle();
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 1}}));
  // It comes back from the delay queue, fails again: the next delay.
  deliver(2, 5, false, false, 0, 1);
  ASSERT_EQ(link->held.size(), 2u);
  EXPECT_EQ(link->held[1].topic, "dde.delay-5000.unit.pool");
  EXPECT_EQ(nlohmann::json::parse(link->held[1].props)["headers"]["attempt"], "2");
  link->held[1].settled(true);
  // The delays spent, its third failure dead-letters it, whole, with why.
  deliver(3, 5, false, false, 0, 2);
  ASSERT_EQ(link->held.size(), 3u);
  EXPECT_EQ(link->held[2].topic, "dde.dead.unit.pool");
  auto dead = nlohmann::json::parse(link->held[2].body);
  EXPECT_EQ(dead["deadLetter"]["attempts"], 3);
  EXPECT_EQ(dead["deadLetter"]["reason"],
            "failed 3 times (retry.delays spent); last failure: on_receive threw: asked to throw on 5");
  EXPECT_EQ(dead["deadLetter"]["md5"].get<std::string>().size(), 32u)
      << "the version that failed it, as any dead letter";
  EXPECT_EQ(dead["body"], (nlohmann::json{{"seq", 5}}));
  link->held[2].settled(true);
  settle();
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 1}, {1, 2}, {1, 3}}));
  EXPECT_TRUE(link->nacks.empty());
  auto d = describe(*r);
  EXPECT_EQ(d["governance"]["delayedRetries"], 2);
  EXPECT_EQ(d["governance"]["deadLettered"], 1);
  EXPECT_EQ(d["retry"], (nlohmann::json{{"delays", {1000, 5000}}}));
}

TEST_F(RouterTest, WithRetryDelaysACopyTheMqsRefusesSendsTheMessageBackToTheQueue) {
  auto r = start_pool(1, {{"retry", {{"delays", {1000}}}}}, {5});
  deliver(1, 5);
  ASSERT_EQ(link->held.size(), 1u);
  link->held[0].settled(false);
  settle();
  EXPECT_TRUE(link->acks.empty());
  EXPECT_EQ(link->nacks, (std::vector<std::pair<std::uint64_t, bool>>{{1, true}}));
  // A message that does not fail is acked at once, as in any pool.
  deliver(2, 6);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 2}}));
  EXPECT_EQ(link->held.size(), 1u);
}

TEST_F(RouterTest, AMessageThatSucceedsOnARetryIsNotDeadLettered) {
  // throw_once_on is once per process: a seq no other test uses.
  auto r = start_pool(1, {{"supervision", {{"maxFailures", 2}}}}, {}, {{"throw_once_on", {905}}});
  deliver(1, 905);
  deliver(2, 905, true);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 2}}));
  EXPECT_TRUE(link->enqueued.empty());
}

}  // namespace
}  // namespace dde::host
