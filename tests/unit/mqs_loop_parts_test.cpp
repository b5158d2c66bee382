// The broker loops' components, each on its own: the links the dequeuer opens off its loop
// (link_opener, plan_link), its channel table, the hosts' outboxes, the pauses it tells hosts of
// (pause_feed) and the messages it publishes itself (own_messages); what goes back of the enqueuer's
// settled publishes (publish_replies). Over the fake broker, run on the test's thread.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "channel_table.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "fake_amqp_session.hpp"
#include "host_outboxes.hpp"
#include "link_opener.hpp"
#include "link_walk.hpp"
#include "own_messages.hpp"
#include "pause_broadcast.hpp"
#include "pause_feed.hpp"
#include "publish_replies.hpp"
#include "recording_connection.hpp"

namespace dde::mqs {
namespace {

using testing::fake_broker;
using testing::settlement;

std::shared_ptr<link_plan> plan_for(const std::string& topic) {
  auto plan = std::make_shared<link_plan>();
  plan->topic = topic;
  plan->mode = delivery_mode::at_most_once;
  plan->epoch = 7;
  plan->tag = "dde-mqs." + topic + ".7";
  plan->params.connection_name = "consume " + topic;
  plan->specs.push_back(spec_for(topic, plan->mode));
  plan->prefetch = 64;
  return plan;
}

/// Jobs the opener was given, run when the test says (as its thread would, later).
struct held_jobs {
  std::vector<std::function<void()>> jobs;
  link_opener::runner runner() {
    return [this](std::function<void()> job) { jobs.push_back(std::move(job)); };
  }
  void run_all() {
    auto now = std::move(jobs);
    jobs.clear();
    for (auto& j : now) j();
  }
};

TEST(LinkOpener, OpensAPlanOffTheLoopAndHandsItBackOnce) {
  fake_broker broker;
  held_jobs held;
  link_opener opener;
  opener.set_runner(held.runner());
  opener.start();  // a runner set: no thread of its own
  opener.open(plan_for("a.b"), broker.opener());
  EXPECT_TRUE(opener.take().empty());  // not run yet
  EXPECT_TRUE(broker.attempts.empty());
  held.run_all();
  auto opened = opener.take();
  ASSERT_EQ(opened.size(), 1u);
  auto& p = *opened.front();
  ASSERT_TRUE(p.session) << p.failed << p.error;
  EXPECT_TRUE(p.failed.empty());
  EXPECT_TRUE(p.error.empty());
  auto* s = broker.find("a.b");
  ASSERT_NE(s, nullptr);
  ASSERT_FALSE(s->rpcs.empty());
  EXPECT_EQ(s->rpcs.front(), "channel.open 1");
  EXPECT_EQ(s->rpcs.back(), "basic.consume 1 a.b dde-mqs.a.b.7");
  EXPECT_TRUE(opener.take().empty());  // handed back once
}

TEST(LinkOpener, ABrokerThatRefusesTheConnectionLeavesTheReasonInThePlan) {
  fake_broker broker;
  broker.refuse_open = "connection refused";
  link_opener opener;
  opener.open(plan_for("a.b"), broker.opener());  // no runner, not started: runs now
  auto opened = opener.take();
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_EQ(opened.front()->failed, "connection refused");
  EXPECT_FALSE(opened.front()->session);
}

TEST(LinkOpener, AConsumeTheBrokerRefusesIsAChannelErrorNamingTheTopic) {
  fake_broker broker;
  broker.refuse_next["basic.consume"] = amqp_session::result{"403 ACCESS_REFUSED", true, 403};
  link_opener opener;
  opener.open(plan_for("a.b"), broker.opener());
  auto opened = opener.take();
  ASSERT_EQ(opened.size(), 1u);
  EXPECT_FALSE(opened.front()->session);  // closed
  EXPECT_TRUE(opened.front()->failed.empty());
  EXPECT_EQ(opened.front()->error, "cannot consume a.b: 403 ACCESS_REFUSED");
}

TEST(LinkOpener, RetiringCancelsEveryConsumerThenClosesTheConnectionOffTheLoop) {
  fake_broker broker;
  std::string error;
  auto session = broker.opener()(broker_params{}, error);
  held_jobs held;
  link_opener opener;
  opener.set_runner(held.runner());
  opener.retire(std::move(session), 1, {"t", "t+1"});
  EXPECT_EQ(broker.live.size(), 1u);  // still open until the job runs
  EXPECT_TRUE(broker.find()->rpcs.empty());
  held.run_all();
  EXPECT_TRUE(broker.live.empty());
  ASSERT_EQ(broker.closed_rpcs.size(), 1u);
  EXPECT_EQ(broker.closed_rpcs[0].second,
            (std::vector<std::string>{"basic.cancel 1 t", "basic.cancel 1 t+1", "channel.close 1"}));
}

TEST(ChannelTable, ChannelNumbersWrapAtTheBrokersLimitAndSkipZero) {
  channel_table t;
  EXPECT_EQ(t.next_channel(3), 1);
  EXPECT_EQ(t.next_channel(3), 2);
  EXPECT_EQ(t.next_channel(3), 3);
  EXPECT_EQ(t.next_channel(3), 1);
  channel_table unlimited;
  for (int i = 1; i < 65535; ++i) unlimited.next_channel(0);
  EXPECT_EQ(unlimited.next_channel(0), 65535);
  EXPECT_EQ(unlimited.next_channel(0), 1);
}

TEST(ChannelTable, EpochsAreNeverReusedAndAGoneChannelIsNotFound) {
  channel_table t;
  broker_link link;
  auto e1 = t.next_epoch(), e2 = t.next_epoch();
  EXPECT_NE(e1, e2);
  EXPECT_NE(e1, 0u);
  t.add(e1, "a.b", e1, "tag", link, 1);
  ASSERT_NE(t.find(e1), nullptr);
  EXPECT_EQ(t.find(e1)->topic, "a.b");
  EXPECT_EQ(t.find(0), nullptr);
  EXPECT_EQ(t.find(e2), nullptr);
  t.erase(e1);
  EXPECT_EQ(t.find(e1), nullptr);
}

TEST(ChannelTable, FlushSendsWhatHostsSettledAsOneMultipleAckAndSaysWhenAHeldOneIsDue) {
  fake_broker broker;
  std::string error;
  broker_link link;
  link.session = broker.opener()(broker_params{}, error);
  auto* s = broker.find();
  channel_table t;
  auto e = t.next_epoch();
  const auto hold = std::chrono::milliseconds(1);
  auto& ch = t.add(e, "a.b", e, "tag", link, 1, hold);
  const auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  for (std::uint64_t tag = 1; tag <= 4; ++tag) ch.acks.delivered(tag, 0);
  ch.acks.ack(1, now);
  ch.acks.ack(2, now);
  ch.acks.ack(4, now);  // behind 3, still open: held for a multiple ack
  t.settled(e);
  auto due = t.flush(now, false);
  EXPECT_EQ(s->acks, (std::vector<settlement>{{1, 2, true}}));
  EXPECT_EQ(due, now + hold);
  due = t.flush(now + hold, false);  // its hold over: it goes alone
  EXPECT_EQ(s->acks, (std::vector<settlement>{{1, 2, true}, {1, 4, false}}));
  EXPECT_EQ(due, std::chrono::steady_clock::time_point::max());
}

TEST(ChannelTable, AChannelErasedWithAcksPendingIsForgotten) {
  fake_broker broker;
  std::string error;
  broker_link link;
  link.session = broker.opener()(broker_params{}, error);
  channel_table t;
  auto e = t.next_epoch();
  auto& ch = t.add(e, "a.b", e, "tag", link, 1);
  ch.acks.delivered(1, 0);
  ch.acks.ack(1, {});
  t.settled(e);
  t.erase(e);
  EXPECT_EQ(t.flush({}, true), std::chrono::steady_clock::time_point::max());
  EXPECT_TRUE(broker.find()->acks.empty());
}

TEST(LinkWalk, TheFirstTurnVisitsEveryLinkAndLaterOnesOnlyWhatIsReady) {
  link_walk walk;
  broker_link a, b;
  a.readable = b.readable = false;  // watched, nothing came
  EXPECT_TRUE(walk.all());          // the first turn connects
  EXPECT_TRUE(walk.take_ready().empty());
  walk.turned();
  EXPECT_FALSE(walk.all());
  walk.ready(b);
  walk.ready(b);  // its socket fired twice before the turn: listed once
  EXPECT_TRUE(b.readable);
  EXPECT_EQ(walk.take_ready(), (std::vector<broker_link*>{&b}));
  EXPECT_EQ(walk.read(), (std::vector<broker_link*>{&b}));
  EXPECT_FALSE(a.readable);
  walk.turned();
  EXPECT_TRUE(walk.read().empty());
  EXPECT_TRUE(walk.take_ready().empty());  // nothing fired since
}

TEST(LinkWalk, ALinkStillReadableAfterItsTurnIsListedForTheNext) {
  link_walk walk;
  walk.turned();
  broker_link a, b;
  a.readable = b.readable = false;
  walk.ready(a);
  walk.ready(b);
  ASSERT_EQ(walk.take_ready().size(), 2u);
  a.readable = false;  // read, its socket watched again
  walk.keep(a);
  walk.keep(b);  // bytes still buffered
  walk.turned();
  EXPECT_EQ(walk.take_ready(), (std::vector<broker_link*>{&b}));
}

TEST(LinkWalk, AChangeOrAFailedLinkAnywhereMakesTheTurnVisitEveryLink) {
  fake_broker broker;
  std::string error;
  link_walk walk;
  walk.turned();
  broker_link quiet;  // a link this turn does not read
  quiet.readable = false;
  quiet.failure_count = walk.failure_counter();
  quiet.session = broker.opener()(broker_params{}, error);
  broker.find()->broken = true;
  quiet.send_ack(1, 7, false);  // an ack the turn flushed fails
  EXPECT_FALSE(quiet.failed.empty());
  EXPECT_TRUE(walk.all());
  walk.turned();
  EXPECT_FALSE(walk.all());
  broker_link ready;
  ready.readable = false;
  walk.ready(ready);
  walk.everything();  // e.g. a topic stopped: the list may name a link gone
  EXPECT_TRUE(walk.take_ready().empty());
  EXPECT_TRUE(walk.all());
  walk.turned();
  EXPECT_FALSE(walk.all());
}

TEST(PlanLink, ATopicsLinkDeclaresItsDeadLetterQueueThenItsOwnAndConsumesItsLeaseQueue) {
  broker_params params;
  params.connection_name = "dde-mqs dequeuer";
  auto plan =
      plan_link("s.orders", {delivery_mode::at_least_once, 0, {}, {}, 32, 600000, "mqs-1"}, 9, true, params);
  EXPECT_EQ(plan->tag, "dde-mqs.s.orders.9");
  EXPECT_EQ(plan->params.connection_name, "dde-mqs dequeuer s.orders");
  ASSERT_EQ(plan->specs.size(), 2u);
  EXPECT_EQ(plan->specs[0].name, dead_letter_topic("s.orders"));
  EXPECT_EQ(plan->specs[1].name, "s.orders");
  EXPECT_TRUE(plan->queues.empty()) << "its own queue alone";
  ASSERT_TRUE(plan->lease_queue);
  EXPECT_EQ(plan->lease_queue->name, lease_topic("mqs-1", 600000, "s.orders"));
  EXPECT_EQ(plan->prefetch, 32);
  EXPECT_TRUE(plan->first);

  auto once =
      plan_link("s.orders", {delivery_mode::at_most_once, 0, {}, {}, 32, 600000, "mqs-1"}, 10, false, params);
  EXPECT_FALSE(once->lease_queue) << "an at-most-once message is acked as it is handed over";
}

TEST(PlanLink, APartitionedTopicConsumesEachPartitionThenItsOwnQueueAndHasNoLeaseQueue) {
  auto plan = plan_link("s.parts", {delivery_mode::at_least_once, 3, {}, {}, 8, 600000, "mqs-1"}, 4, false,
                        broker_params{});
  EXPECT_EQ(plan->queues, (std::vector<std::string>{
                              partition_spec("s.parts", 0, delivery_mode::at_least_once).name,
                              partition_spec("s.parts", 1, delivery_mode::at_least_once).name,
                              partition_spec("s.parts", 2, delivery_mode::at_least_once).name, "s.parts"}));
  EXPECT_FALSE(plan->lease_queue);
}

TEST(PlanLink, OnAClusterTopicsStartAtNodesTheirNamesPickAndALostLinkAtTheOneItWasGiven) {
  broker_params params;
  params.nodes.resize(3);
  std::set<std::size_t> firsts;
  for (int i = 0; i < 30; ++i)
    firsts.insert(plan_link("t" + std::to_string(i), {}, 1, false, params)->params.first_node);
  EXPECT_EQ(firsts.size(), 3u) << "thirty topics start on every node";
  EXPECT_EQ(plan_link("t0", {delivery_mode::at_least_once, 0, 2, {}, 0, 0, ""}, 1, false, params)
                ->params.first_node,
            2u);
}

TEST(OwnMessages, ALeaseCopyNamesItsDeliveryAndTheHeaderIsDroppedFromWhatComesBack) {
  own_messages own;
  std::vector<outgoing_message> published;
  own.set_publisher([&](std::vector<outgoing_message>&& out) { published = std::move(out); });
  message_props props;
  props.headers.emplace_back("x-trace", "t1");
  own.add_lease_copy("dde.lease.q", 42, "body", props, [](bool) {});
  own.add_dead_letter("s.orders", "body2", props, [](bool) {});
  EXPECT_TRUE(published.empty()) << "held until the turn ends";
  own.flush();
  ASSERT_EQ(published.size(), 2u);
  EXPECT_EQ(published[0].topic, "dde.lease.q");
  EXPECT_EQ(own_messages::lease_id_of(published[0].props), 42u);
  EXPECT_EQ(published[1].topic, dead_letter_topic("s.orders"));
  EXPECT_FALSE(own_messages::lease_id_of(published[1].props));

  auto back = published[0].props;
  own_messages::drop_lease_header(back);
  EXPECT_FALSE(own_messages::lease_id_of(back));
  EXPECT_EQ(back.headers, props.headers) << "only the lease header goes";
  message_props bad;
  bad.headers.emplace_back("x-dde-lease", "12abc");
  EXPECT_FALSE(own_messages::lease_id_of(bad));
}

TEST(OwnMessages, WithoutAPublisherEachIsRefused) {
  own_messages own;
  std::vector<bool> settled;
  own.add_lease_copy("q", 1, "b", {}, [&](bool ok) { settled.push_back(ok); });
  own.flush();
  EXPECT_EQ(settled, std::vector<bool>{false});
}

/// Two hosts (1 and 2) of the MQS "mqs-1", and what it tells them.
struct PauseFeed : ::testing::Test {
  host_outboxes hosts;
  std::shared_ptr<dde::testing::recording_connection> a = pulled(1), b = pulled(2);
  pause_feed feed{"mqs-1", hosts};
  const pause_feed::clock::time_point t = pause_feed::clock::now();

  std::shared_ptr<dde::testing::recording_connection> pulled(client_id id) {
    auto c = std::make_shared<dde::testing::recording_connection>(id);
    hosts.pulled(id, c, false);
    return c;
  }
};

TEST_F(PauseFeed, AnotherMqssPauseIsToldToTheHostsPullingItsTopicAndOurOwnEchoIsNot) {
  feed.listen(1, "s.api", t);
  pause_broadcast p{"s.api", 5000, epoch_ms_now() + 5000, "429", "mqs-2/host", "mqs-2"};
  feed.heard(encode_pause_broadcast(p), t);
  p.mqs = "mqs-1";
  p.topic = "s.other";
  feed.heard(encode_pause_broadcast(p), t);
  feed.heard("not a pause", t);
  hosts.send();
  auto records = a->take();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].header["topic"], "s.api");
  EXPECT_EQ(records[0].header["origin"], "mqs-2/host");
  EXPECT_TRUE(b->take().empty()) << "it pulls nothing";
}

TEST_F(PauseFeed, AHostThatStartsPullingAPausedTopicHearsOfItAndOneThatCancelledDoesNot) {
  feed.listen(2, "s.api", t);
  feed.stop_listening(2, "s.api");
  feed.pause("s.api", std::chrono::milliseconds(3000), "503", "mqs-1/h", t);
  feed.listen(1, "s.api", t + std::chrono::milliseconds(1000));
  hosts.send();
  auto records = a->take();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].header["reason"], "503");
  EXPECT_LE(records[0].header["ms"].get<long long>(), 2000) << "the time left";
  EXPECT_TRUE(b->take().empty());
}

TEST(HostOutboxes, EachHostGetsItsTurnsRecordsAsOneMessage) {
  host_outboxes hosts;
  auto a = std::make_shared<dde::testing::recording_connection>(1);
  auto b = std::make_shared<dde::testing::recording_connection>(2);
  hosts.pulled(1, a, false);
  hosts.pulled(2, b, true);
  deliver_header form = deliver_header::binary;
  ASSERT_NE(hosts.records(1, form), nullptr);
  EXPECT_EQ(form, deliver_header::json);
  ASSERT_NE(hosts.records(2, form), nullptr);
  EXPECT_EQ(form, deliver_header::binary);
  append_pause(*hosts.records(1), "a.b", 100, "busy", "m/1");
  append_pause(*hosts.records(1), "a.c", 100, "busy", "m/1");
  hosts.send();
  ASSERT_EQ(a->sent.size(), 1u);
  EXPECT_EQ(a->take().size(), 2u);
  EXPECT_TRUE(b->sent.empty());  // nothing for it this turn
  hosts.send();
  EXPECT_TRUE(a->sent.empty());  // sent once
}

TEST(HostOutboxes, AHostThatNeverPulledOrLeftHasNoOutbox) {
  host_outboxes hosts;
  auto a = std::make_shared<dde::testing::recording_connection>(1);
  EXPECT_EQ(hosts.records(1), nullptr);
  EXPECT_TRUE(hosts.has_room(1, 10));  // gone: nothing will be queued for it
  hosts.pulled(1, a, false);
  append_pause(*hosts.records(1), "a.b", 100, "busy", "m/1");
  hosts.forget(1);
  EXPECT_EQ(hosts.records(1), nullptr);
  hosts.send();
  EXPECT_TRUE(a->sent.empty());
}

TEST(HostOutboxes, RoomEndsWhereThisTurnsRecordsReachTheLimit) {
  host_outboxes hosts;
  auto a = std::make_shared<dde::testing::recording_connection>(1);
  hosts.pulled(1, a, false);
  EXPECT_TRUE(hosts.has_room(1, 1));
  hosts.records(1)->append(10, 'x');
  EXPECT_TRUE(hosts.has_room(1, 11));
  EXPECT_FALSE(hosts.has_room(1, 10));
}

outgoing_message from(const std::shared_ptr<net::ws_connection>& conn, std::uint64_t seq, std::string body) {
  return outgoing_message{conn, "a.b", delivery_mode::at_least_once, seq, std::move(body), {}, {}};
}

/// The enqueuer's flow and counters that publish_replies::send settles into.
class PublishReplies : public ::testing::Test {
 protected:
  flow_control flow{100, 1000};
  metrics_registry registry;
  mqs_metrics metrics{registry};
  topic_counter_cache counted{metrics};
  publish_replies replies;
};

TEST_F(PublishReplies, EachHostGetsItsConfirmsAndRejectsInOneMessage) {
  auto a = std::make_shared<dde::testing::recording_connection>(1);
  auto b = std::make_shared<dde::testing::recording_connection>(2);
  flow.add(3, 6);
  replies.confirmed().push_back(from(a, 1, "xx"));
  replies.confirmed().push_back(from(b, 7, "yy"));
  replies.confirmed().push_back(from(a, 2, "zz"));
  replies.refused(from(a, 3, "w"), "cannot declare queue a.b: 403");
  replies.send(flow, counted);
  EXPECT_EQ(flow.messages(), 0u);  // the confirmed left the flow (refuse() takes the refused out)
  EXPECT_EQ(flow.bytes(), 0u);
  ASSERT_EQ(a->sent.size(), 1u);
  auto to_a = a->take();
  ASSERT_EQ(to_a.size(), 2u);
  EXPECT_EQ(to_a[0].header["action"], "confirm");
  EXPECT_EQ(to_a[0].header["seqs"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(to_a[1].header["action"], "reject");
  EXPECT_EQ(to_a[1].header["seqs"], nlohmann::json::array({3}));
  EXPECT_EQ(to_a[1].header["error"], "cannot declare queue a.b: 403");
  auto to_b = b->take();
  ASSERT_EQ(to_b.size(), 1u);
  EXPECT_EQ(to_b[0].header["seqs"], nlohmann::json::array({7}));
  replies.send(flow, counted);  // sent once
  EXPECT_TRUE(a->sent.empty());
  EXPECT_TRUE(b->sent.empty());
}

TEST_F(PublishReplies, TheMqssOwnMessagesAreToldByTheirCallbacks) {
  flow.add(1, 1);
  std::vector<bool> told;
  auto own = [&] {
    auto m = from(nullptr, 0, "x");
    m.settled = [&](bool ok) { told.push_back(ok); };
    return m;
  };
  replies.confirmed().push_back(own());
  replies.refused(own(), "no");
  replies.send(flow, counted);
  EXPECT_EQ(told, (std::vector<bool>{true, false}));
}

}  // namespace
}  // namespace dde::mqs
