// The router without processes or a broker: real worker cells running a real plugin (faulty) on one
// io_context that the test drives step by step, and a fake MQS link that records what the router asks
// of it. Each test delivers what it needs and runs the io_context until nothing is left to do.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/swap_marker.hpp"
#include "mqs_link.hpp"
#include "ops_server.hpp"
#include "router.hpp"
#include "router_fixture.hpp"

namespace dde::host {
namespace {

using testing::HotSwapTest;
using testing::RouterTest;

using namespace std::chrono_literals;

TEST_F(RouterTest, AsksForAsManyMessagesAsItsWorkersHaveRoomForWithOneConsumerEach) {
  auto r = start_pool(2, {{"credits", 4}});
  EXPECT_EQ(link->attached, "unit.pool");
  ASSERT_EQ(link->pulls.size(), 1u);
  EXPECT_EQ(link->pulls[0].topic, "unit.pool");
  EXPECT_EQ(link->pulls[0].mode, delivery_mode::at_least_once);
  EXPECT_EQ(link->pulls[0].credit, 8u);
  EXPECT_EQ(link->pulls[0].consumers, 2u);
}

TEST_F(RouterTest, AnAtLeastOnceMessageIsAckedOnceDoneAndItsCreditAskedForAgain) {
  auto r = start_pool(2, {{"credits", 4}});
  auto& handling = metrics_registry::process().histogram("dde_host_handling_seconds", "", latency_buckets(),
                                                         {{"pool", "unit.pool"}});
  auto handled_before = handling.cumulative().back();
  deliver(7, 1);
  deliver(8, 2);
  EXPECT_EQ(handling.cumulative().back(), handled_before + 2) << "each message's handling time is observed";
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 7}, {1, 8}}));
  EXPECT_TRUE(link->nacks.empty());
  EXPECT_EQ(link->credit_asked(), 8u) << "2 back while 6 asked are still to come: less than half the window";
  deliver(9, 3);
  deliver(10, 4);
  EXPECT_EQ(link->credit_asked(), 8u + 4u) << "half the window back: asked for again in one pull";
  auto d = describe(*r);
  EXPECT_EQ(d["stats"]["delivered"], 4);
  EXPECT_EQ(d["stats"]["acked"], 4);
}

TEST_F(RouterTest, ABatchFinishedInOneBurstIsAskedForAgainInOnePull) {
  // At-most-once, so nothing waits for an ack: the 8 finish as fast as the worker takes them.
  auto r = start_pool(1, {{"credits", 8}, {"deliveryMode", "at-most-once"}});
  ASSERT_EQ(link->pulls.size(), 1u);
  ASSERT_EQ(link->pulls[0].credit, 8u);
  // The MQS hands over the whole window in one WebSocket message, as it does under load.
  std::vector<topic_sink::delivery> batch;
  for (std::uint64_t tag = 1; tag <= 8; ++tag) {
    topic_sink::delivery d;
    d.tag = tag;
    d.props.message_id = "m" + std::to_string(tag);
    d.body = nlohmann::json{{"seq", tag}}.dump();
    batch.push_back(std::move(d));
  }
  link->sink.lock()->deliver(1, std::move(batch));
  settle();
  EXPECT_EQ(describe(*r)["stats"]["done"], 8);
  // Asked after the first report, the credit would go as a pull of 1 (nothing being outstanding),
  // and the MQS would hand over a batch of one: the window would go back in fragments.
  ASSERT_EQ(link->pulls.size(), 2u) << "one pull for the burst";
  EXPECT_EQ(link->pulls[1].credit, 8u);
}

TEST_F(RouterTest, TimeInQueueRunsFromTheMqsPublishStampToTheHandOverAndASkewedClockCountsAsZero) {
  auto r = start_pool(1, {{"isolateName", "queued"}});
  auto& queued = histogram("dde_host_queue_seconds", "unit.queued");
  ASSERT_EQ(queued.cumulative().back(), 0u);
  deliver(1, 1, false, false, wall_us(-250ms));
  EXPECT_EQ(queued.cumulative().back(), 1u);
  EXPECT_DOUBLE_EQ(queued.sum(), 0.25);
  deliver(2, 2, false, false, wall_us(3s));  // the publishing MQS's clock is 3 s ahead of this one
  EXPECT_EQ(queued.cumulative().back(), 2u);
  EXPECT_DOUBLE_EQ(queued.sum(), 0.25) << "a stamp in the future is clamped to 0";
  EXPECT_EQ(queued.cumulative().front(), 1u) << "in the first bucket";
  deliver(3, 3);
  EXPECT_EQ(queued.cumulative().back(), 2u) << "no stamp (not published through an MQS): not observed";
  auto latency = describe(*r)["latency"];
  ASSERT_TRUE(latency.contains("queueMs")) << latency.dump();
  EXPECT_EQ(latency["queueMs"]["count"], 2);
  EXPECT_EQ(latency["queueMs"]["p50"], 0.1) << "rank 1 of 2: the top of the first bucket (100 µs), in ms";
  EXPECT_EQ(latency["queueMs"]["p99"], 247.0) << "rank 1.98: 98% through (100, 250] ms: " << latency.dump();
  EXPECT_EQ(latency["handlingMs"]["count"], 3) << "every message handed over is timed";
}

TEST_F(RouterTest, AnAsksRoundTripIsObservedPerAskedPoolWhenItsReplyComes) {
  auto r = start_pool(1, {{"isolateName", "asker"}});
  envelope ask;
  ask.id = "ask-1";
  ask.from = "unit/asker";
  ask.to = "unit/answers";
  ask.ask_instance = link->instance();
  ask.ask_worker = "w-1";
  r->enqueue("unit.answers", delivery_mode::at_least_once, ask);  // as a worker's ask() does
  settle();
  auto& round_trip = histogram("dde_host_ask_seconds", "unit.answers");
  auto before = round_trip.cumulative().back();
  auto sum_before = round_trip.sum();
  advance(40ms);
  envelope reply;
  reply.id = "reply-1";
  reply.to = "unit/asker";
  reply.in_reply_to = "ask-1";
  reply.to_worker = "w-1";
  link->sink.lock()->deliver_reply(reply);
  settle();
  EXPECT_EQ(round_trip.cumulative().back(), before + 1);
  EXPECT_DOUBLE_EQ(round_trip.sum() - sum_before, 0.04);
  link->sink.lock()->deliver_reply(reply);  // the same reply again: the ask ended already
  settle();
  EXPECT_EQ(round_trip.cumulative().back(), before + 1);

  envelope plain = ask;
  plain.id = "send-1";
  plain.ask_worker.clear();  // a send, not an ask
  r->enqueue("unit.answers", delivery_mode::at_least_once, plain);
  envelope forwarded = ask;
  forwarded.id = "ask-of-another-pool";
  forwarded.from = "unit/other";  // its asker's: this pool only passes it on
  r->enqueue("unit.answers", delivery_mode::at_least_once, forwarded);
  settle();
  for (auto id : {"send-1", "ask-of-another-pool"}) {
    reply.in_reply_to = id;
    link->sink.lock()->deliver_reply(reply);
  }
  settle();
  EXPECT_EQ(round_trip.cumulative().back(), before + 1) << "only this pool's own asks are timed";
}

TEST_F(RouterTest, AnAskWithoutAReplyFor60sTimesOutAndIsCountedSo) {
  auto r = start_pool(1, {{"isolateName", "patient"}});
  auto& round_trip = histogram("dde_host_ask_seconds", "unit.silent");
  auto& timeouts =
      metrics_registry::process().counter("dde_host_ask_timeouts_total", "", {{"pool", "unit.silent"}});
  envelope ask;
  ask.from = "unit/patient";
  ask.to = "unit/silent";
  ask.ask_instance = link->instance();
  ask.ask_worker = "w-1";
  ask.id = "ask-a";
  r->enqueue("unit.silent", delivery_mode::at_least_once, ask);
  settle();
  advance(30s);
  ask.id = "ask-b";
  r->enqueue("unit.silent", delivery_mode::at_least_once, ask);
  settle();
  EXPECT_EQ(timeouts.value(), 0);
  advance(30s);
  EXPECT_EQ(timeouts.value(), 1) << "the first, 60 s after it was sent";
  EXPECT_EQ(round_trip.cumulative().back(), 1u) << "observed with the time it waited";
  EXPECT_DOUBLE_EQ(round_trip.sum(), 60);
  envelope late;
  late.in_reply_to = "ask-a";
  late.to_worker = "w-1";
  link->sink.lock()->deliver_reply(late);
  settle();
  EXPECT_EQ(round_trip.cumulative().back(), 1u) << "a reply after the timeout is not observed again";
  advance(30s);
  EXPECT_EQ(timeouts.value(), 2);
}

TEST_F(RouterTest, EveryPerPoolSeriesIsThereAtZeroBeforeTheFirstMessage) {
  auto r = start_pool(2, {{"isolateName", "fresh"}});
  metrics_registry figures;
  add_host_metrics(figures, {{"unit", nlohmann::json::array({describe(*r)})}}, top_level_stats{});
  auto text = figures.render() + metrics_registry::process().render();
  for (auto name :
       {"dde_host_messages_received_total", "dde_host_messages_handled_total",
        "dde_host_messages_failed_total", "dde_host_messages_sent_total", "dde_host_messages_acked_total",
        "dde_host_messages_redelivered_total", "dde_host_messages_dead_lettered_total",
        "dde_host_worker_restarts_total", "dde_host_hot_swaps_total", "dde_host_in_flight",
        "dde_host_queue_seconds_count", "dde_host_handling_seconds_count", "dde_host_ask_seconds_count",
        "dde_host_ask_timeouts_total"})
    EXPECT_NE(text.find(std::string(name) + "{pool=\"unit.fresh\"} 0\n"), std::string::npos) << name << "\n"
                                                                                             << text;
  EXPECT_NE(text.find("dde_host_plugin_load_failures_total{pool=\"unit.fresh\",reason=\"missing\"} 0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dde_host_workers{pool=\"unit.fresh\"} 2\n"), std::string::npos) << text;
}

TEST_F(RouterTest, ARedeliveredMessageIsCounted) {
  auto r = start_pool(1);
  deliver(3, 1, true);
  EXPECT_EQ(describe(*r)["stats"]["redelivered"], 1);
}

TEST_F(RouterTest, AStoppedPoolSaysHowToStartItAndRestartStartsItAgain) {
  auto r = start_pool(
      1, {{"credits", 4}, {"supervision", {{"strategy", "restart"}, {"maxRestarts", 1}, {"maxFailures", 0}}}},
      {5, 6});
  deliver(1, 5);
  deliver(2, 6);
  ASSERT_EQ(link->cancelled, std::vector<std::string>{"unit.pool"});
  std::optional<op_result> answer;
  r->set_rate(10, 1000ms, 0, [&](op_result done) { answer = std::move(done); });
  settle();
  ASSERT_TRUE(answer && !*answer);
  EXPECT_EQ(
      answer->error(),
      "pool unit/pool is stopped: 1 restarts within 60000 ms; RESTART starts it again (ddectl restart ID "
      "unit pool, or POST /registry/system/restart)");
  EXPECT_EQ(http_status(*answer), 409);
  link->pulls.clear();
  r->restart_workers([&](op_result done) { answer = std::move(done); });
  settle();
  ASSERT_TRUE(answer && *answer) << answer->error();
  auto d = describe(*r);
  EXPECT_EQ(d["poolState"], "running") << d.dump();
  EXPECT_EQ(d["workers"][0]["state"], "running") << d.dump();
  ASSERT_FALSE(link->pulls.empty()) << "it consumes again";
  EXPECT_EQ(link->credit_asked(), 4u);
  deliver(3, 7);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 3}}));
  deliver(4, 5);
  EXPECT_TRUE(link->cancelled.size() == 1u) << "a fresh restart budget: one restart allowed again";
  EXPECT_EQ(describe(*r)["poolState"], "running");
}

TEST_F(RouterTest, AReconnectedLinkIsAskedForEveryCreditAgain) {
  auto r = start_pool(2, {{"credits", 3}});
  ASSERT_EQ(link->credit_asked(), 6u);
  link->pulls.clear();
  link->sink.lock()->on_connected();
  settle();
  EXPECT_EQ(link->credit_asked(), 6u) << "credits asked of the old connection are void";
}

TEST_F(RouterTest, TailChoppingAsksTheNextWorkerOnlyOnceTheDelayPassed) {
  auto r =
      start_pool(2, {{"routerType", "tailChopping"}, {"tailChopDelayMs", 100}}, {}, {{"hang_once_on", {1}}});
  deliver(5, 1);  // the first worker never finishes it
  auto first = describe(*r)["firstReply"];
  EXPECT_EQ(first["copies"], 1);
  advance(99ms);
  EXPECT_EQ(describe(*r)["firstReply"]["chopped"], 0) << "not before the delay";
  advance(1ms);
  auto d = describe(*r);
  EXPECT_EQ(d["firstReply"]["chopped"], 1) << d.dump();
  EXPECT_EQ(d["firstReply"]["copies"], 2);
  advance(1000ms);
  EXPECT_EQ(describe(*r)["firstReply"]["copies"], 2) << "every worker has a copy: no more chops";
  EXPECT_TRUE(link->acks.empty()) << "no reply and one copy still held: not acked yet";
}

TEST_F(RouterTest, ShutdownWaitsForInFlightMessagesUntilItsTimeout) {
  auto r = start_pool(1, {}, {}, {{"hang_on", {1}}});
  deliver(5, 1);
  bool done = false;
  r->shutdown(5000ms, [&] { done = true; });
  settle();
  EXPECT_EQ(link->cancelled, std::vector<std::string>{"unit.pool"}) << "it stops consuming at once";
  advance(4999ms);
  EXPECT_FALSE(done) << "a message is still in flight";
  advance(1ms);
  EXPECT_TRUE(done);
}

TEST_F(RouterTest, ShutdownOfAnIdlePoolNeedsNoTimeout) {
  auto r = start_pool(2);
  bool done = false;
  r->shutdown(5000ms, [&] { done = true; });
  settle();
  EXPECT_TRUE(done);
  EXPECT_EQ(clock->pending(), 0u) << "the drain timer was cancelled";
}

TEST_F(RouterTest, AutoscalingGrowsWithTheBacklogAtEachSample) {
  link->depth = 1000;
  auto r =
      start_pool(1, {{"scale", {{"min", 1}, {"max", 4}, {"targetBacklogPerWorker", 10}, {"sampleMs", 500}}}});
  std::vector<nlohmann::json> events;  // what the activator hears: it tells the registry to describe
  r->set_events([&](nlohmann::json e) { events.push_back(std::move(e)); }, "");
  EXPECT_EQ(describe(*r)["workersCount"], 1);
  advance(500ms);
  EXPECT_EQ(link->depth_asked, 1);
  EXPECT_EQ(describe(*r)["workersCount"], 1) << "growing needs two samples above the target in a row";
  EXPECT_TRUE(events.empty());
  advance(500ms);
  auto d = describe(*r);
  EXPECT_EQ(d["workersCount"], 2) << d.dump();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], (nlohmann::json{{"event", "poolScaled"}, {"isolateName", "pool"}, {"workers", 2}}));
  EXPECT_EQ(d["scaling"]["scaleUps"], 1);
  EXPECT_EQ(d["scaling"]["backlog"], 1000);
  EXPECT_EQ(link->pulls.back().consumers, 2u) << "the new worker is a consumer too";
  advance(500ms);
  EXPECT_EQ(describe(*r)["workersCount"], 2) << "after a change, two samples above the target again";
  advance(500ms);
  EXPECT_EQ(describe(*r)["workersCount"], 4) << "up to double per step";
  advance(1000ms);
  EXPECT_EQ(describe(*r)["workersCount"], 4) << "never above max";
}

TEST_F(RouterTest, ARateLimitedWorkerPausesThePoolAndTellsTheReplicas) {
  auto r = start_pool(2, {}, {}, {{"backoff_on", {1}}, {"backoff_ms", 60000}});
  deliver(5, 1);
  ASSERT_EQ(link->pauses.size(), 1u);
  EXPECT_EQ(link->pauses[0].topic, "unit.pool");
  EXPECT_EQ(link->pauses[0].ms, 60000ms);
  deliver(6, 2);
  EXPECT_TRUE(link->acks.empty()) << "the other worker starts nothing during the pause either";
  auto g = describe(*r)["governance"];
  EXPECT_EQ(g["rateLimited"], 1);
  EXPECT_EQ(g["retries"], 1) << "the message waits for the same worker";
  EXPECT_EQ(g["pauses"], 1);
  EXPECT_GT(g["pausedForMs"].get<long long>(), 50000);
  // A replica's pause comes through the MQS; our own announcement coming back changes nothing.
  ASSERT_TRUE(link->on_pause);
  link->on_pause(120000ms, "replica quota", "mqs/" + link->instance());
  settle();
  EXPECT_EQ(describe(*r)["governance"]["remotePauses"], 0);
  link->on_pause(120000ms, "replica quota", "mqs/another-instance");
  settle();
  g = describe(*r)["governance"];
  EXPECT_EQ(g["remotePauses"], 1);
  EXPECT_EQ(g["lastPauseReason"], "replica quota [from mqs/another-instance]");
  EXPECT_EQ(link->pauses.size(), 1u) << "a replica's pause is not announced again";
}

TEST_F(RouterTest, AKilledWorkerTakesNothingMoreAndRestartBringsItBack) {
  auto r = start_pool(2, {{"credits", 2}});
  auto victim = describe(*r)["workers"][1]["id"].get<std::string>();
  std::optional<kill_result> answer;
  r->kill_workers(victim, [&](kill_result killed) { answer = std::move(killed); });
  settle();
  ASSERT_TRUE(answer && *answer);
  EXPECT_EQ(answer->value(), std::vector<std::string>{victim});
  auto d = describe(*r);
  EXPECT_EQ(d["workers"][1]["state"], "killed") << d.dump();
  for (int seq = 1; seq <= 4; ++seq) deliver(10 + seq, seq);
  d = describe(*r);
  EXPECT_EQ(d["workers"][0]["done"], 4);
  EXPECT_EQ(d["workers"][1]["done"], 0) << "a killed worker is given nothing";
  r->kill_workers(victim, [&](kill_result killed) { answer = std::move(killed); });
  settle();
  ASSERT_FALSE(*answer);
  EXPECT_NE(answer->error().find("already killed"), std::string::npos) << answer->error();
  EXPECT_EQ(http_status(*answer), 409);
  r->kill_workers("no-such-worker", [&](kill_result killed) { answer = std::move(killed); });
  settle();
  ASSERT_FALSE(*answer);
  EXPECT_EQ(answer->error().rfind("no worker \"no-such-worker\" in pool unit/pool", 0), 0u)
      << answer->error();
  EXPECT_EQ(http_status(*answer), 404);
  std::optional<op_result> restarted;
  r->restart_workers([&](op_result done) { restarted = std::move(done); });
  settle();
  ASSERT_TRUE(restarted && *restarted);
  d = describe(*r);
  EXPECT_EQ(d["workers"][1]["state"], "running") << d.dump();
  EXPECT_NE(d["workers"][1]["id"], victim) << "a fresh instance";
  EXPECT_EQ(d["stats"]["restarts"], 1);
  EXPECT_EQ(link->pulls.back().consumers, 2u);
}

TEST_F(RouterTest, KillWaitsForWhatTheWorkerHoldsAndRestartWaitsForInFlightMessages) {
  auto r = start_pool(1, {}, {}, {{"hang_on", {1}}});
  deliver(5, 1);  // never done
  std::optional<kill_result> answer;
  r->kill_workers("", [&](kill_result killed) { answer = std::move(killed); });
  settle();
  ASSERT_TRUE(answer && *answer);
  EXPECT_EQ(describe(*r)["workers"][0]["state"], "killing") << "it still holds its message";
  std::optional<op_result> restarted;
  r->restart_workers([&](op_result done) { restarted = std::move(done); });
  settle();
  ASSERT_TRUE(restarted && *restarted) << "the swap begins";
  r->restart_workers([&](op_result done) { restarted = std::move(done); });
  settle();
  ASSERT_FALSE(*restarted);
  EXPECT_EQ(restarted->error(), "pool unit/pool is already restarting");
  EXPECT_EQ(http_status(*restarted), 409);
  r->kill_workers("", [&](kill_result killed) { answer = std::move(killed); });
  settle();
  ASSERT_FALSE(*answer);
  EXPECT_NE(answer->error().find("is restarting"), std::string::npos) << answer->error();
  EXPECT_EQ(http_status(*answer), 409);
  EXPECT_EQ(describe(*r)["stats"]["restarts"], 0) << "not before the message in flight finished";
}

TEST_F(HotSwapTest, ASwapIsMarkedOnDiskForTheActivatorUntilTheNewVersionFinishesAMessage) {
  auto r =
      start_pool(1, {{"uri", plugin.string()}, {"hotDeployment", true}, {"hotDeploymentIntervalMs", 1000}});
  std::vector<std::string> events;
  r->set_events([&](nlohmann::json e) { events.push_back(e.value("event", "")); }, (dir / "cache").string());
  auto marker = protocol::swap_marker_path(dir / "cache", "unit", "pool");
  replace_with(std::string(DDE_WORKER_DIR) + "/libconsumer.so");
  advance(1000ms);
  auto swapped_to = describe(*r)["pluginMd5"].get<std::string>();
  EXPECT_EQ(protocol::read_swap_marker(marker), swapped_to)
      << "on disk before the new version takes a message: a crash cannot lose it, as it can the event";
  EXPECT_EQ(events, (std::vector<std::string>{"pluginSwapping"}));
  deliver(1, 1);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the version finished a message: no longer on trial";
  EXPECT_EQ(events, (std::vector<std::string>{"pluginSwapping", "pluginGood"}));
}

TEST_F(HotSwapTest, ANewVersionIsSwappedInAtThePollAndABrokenOneRefused) {
  auto r =
      start_pool(2, {{"uri", plugin.string()}, {"hotDeployment", true}, {"hotDeploymentIntervalMs", 1000}});
  auto before = describe(*r)["pluginMd5"].get<std::string>();
  replace_with(std::string(DDE_WORKER_DIR) + "/libecho_v2.so");
  advance(999ms);
  EXPECT_EQ(describe(*r)["pluginMd5"], before) << "not before the poll";
  advance(1ms);
  auto d = describe(*r);
  EXPECT_NE(d["pluginMd5"], before) << d.dump();
  EXPECT_EQ(d["hotDeploy"]["swaps"], 1);
  EXPECT_EQ(d["hotDeploy"]["state"], "running");
  auto running = d["pluginMd5"];
  {
    std::ofstream broken(dir / "next.so", std::ios::trunc);
    broken << "not a shared object";
  }
  std::filesystem::rename(dir / "next.so", plugin);
  advance(1000ms);
  d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], running) << "the running version keeps serving";
  EXPECT_EQ(d["hotDeploy"]["state"], "refused");
  EXPECT_EQ(d["hotDeploy"]["swaps"], 1);
  EXPECT_FALSE(d["hotDeploy"]["error"].get<std::string>().empty());
  deliver(9, 1, false, true);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 9}}))
      << "and it still handles messages";
}

}  // namespace
}  // namespace dde::host
