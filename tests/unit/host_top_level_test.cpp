// The top level (an isolate system's link to its MQS) without an MQS or sockets: the test opens
// recording connections itself (the top level's connector only counts attempts), plays the MQS's
// records into it, and reads back what the host sent: hello, resends after a reconnect, acks of the
// current connection only, the outbound window, depth questions, a stop that waits for confirms.
#include <gtest/gtest.h>

#include <boost/asio/defer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "recording_connection.hpp"
#include "top_level.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;
using dde::testing::recording_connection;

constexpr const char* topic = "s.consumer";

/// A pool as the link sees it: records what it is handed.
class recording_sink : public topic_sink {
 public:
  struct delivery {
    std::uint64_t generation, tag;
    std::string body;
    std::uint64_t published_us;
  };
  void deliver(std::uint64_t generation, std::vector<topic_sink::delivery> batch) override {
    ++batches;
    for (auto& d : batch) deliveries.push_back({generation, d.tag, std::move(d.body), d.published_us});
  }
  void deliver_reply(envelope e) override { replies.push_back(std::move(e)); }
  void on_connected() override { ++connected; }

  std::vector<delivery> deliveries;
  int batches = 0;  ///< hand-overs (one for all of a WebSocket message's deliveries)
  std::vector<envelope> replies;
  int connected = 0;
};

class TopLevelTest : public ::testing::Test {
 protected:
  TopLevelTest() {
    options.mqs_url = "ws://127.0.0.1:1/mqs";
    options.system = "s";
    options.instance = "0b1c2d3e-aaaa-bbbb-cccc-000000000001";
    options.window = 4;
    options.reply_credit = 16;
    options.connect = [this](const net::ws_url& url, std::shared_ptr<net::ws_handler>,
                             std::function<void(const std::string&)>) { attempts.push_back(url.port); };
  }

  std::shared_ptr<top_level> start() {
    link = std::make_shared<top_level>(io, options);
    link->start();
    io.poll();
    io.restart();
    return link;
  }
  /// Runs what is ready (never waits).
  void poll() {
    io.poll();
    io.restart();
  }
  std::shared_ptr<recording_connection> open(std::uint64_t id) {
    auto c = std::make_shared<recording_connection>(id);
    link->on_open(c);
    poll();
    return c;
  }
  void from_mqs(const std::shared_ptr<recording_connection>& c, const std::string& batch) {
    link->on_message(c, batch, true);
    poll();
  }
  static std::string welcome() {
    std::string out;
    mqs::append_welcome(out, "mqs-1");
    return out;
  }
  static std::string confirm(std::vector<std::uint64_t> seqs) {
    std::string out;
    mqs::append_confirm(out, seqs);
    return out;
  }
  /// What the host sent on `c` since the last call, as the MQS reads it.
  static std::vector<mqs::request> requests(recording_connection& c,
                                            std::vector<std::string>* bodies = nullptr) {
    std::vector<mqs::request> out;
    for (auto& r : c.take()) {
      auto parsed = mqs::parse_request(r.header);
      EXPECT_TRUE(parsed.req) << parsed.error;
      if (!parsed.req) continue;
      out.push_back(*parsed.req);
      if (bodies && std::holds_alternative<mqs::enqueue_request>(out.back())) bodies->push_back(r.body);
    }
    return out;
  }
  template <typename T>
  static std::vector<T> only(const std::vector<mqs::request>& rs) {
    std::vector<T> out;
    for (auto& r : rs)
      if (auto* t = std::get_if<T>(&r)) out.push_back(*t);
    return out;
  }
  top_level_stats stats() {
    top_level_stats out;
    link->read_stats([&](const top_level_stats& s) { out = s; });
    poll();
    return out;
  }
  void enqueue(const std::string& body, delivery_mode mode = delivery_mode::at_least_once) {
    link->enqueue(topic, mode, "", body);
  }

  boost::asio::io_context io;
  top_level_options options;
  std::vector<std::uint16_t> attempts;  ///< ports of the connect attempts
  std::shared_ptr<top_level> link;
};

TEST_F(TopLevelTest, EachConnectionStartsWithHelloThenWhatWaitsThenThePullOfItsReplies) {
  start();
  EXPECT_EQ(attempts, (std::vector<std::uint16_t>{1}));
  enqueue("a");
  enqueue("b");
  enqueue("x", delivery_mode::at_most_once);
  poll();
  auto c = open(1);
  std::vector<std::string> bodies;
  auto rs = requests(*c, &bodies);
  ASSERT_EQ(rs.size(), 5u);
  auto& hello = std::get<mqs::hello_request>(rs[0]);
  EXPECT_EQ(hello.system, "s");
  EXPECT_EQ(hello.instance, options.instance);
  auto enqueues = only<mqs::enqueue_request>(rs);
  ASSERT_EQ(enqueues.size(), 3u);
  EXPECT_EQ(enqueues[0].seq, std::optional<std::uint64_t>(1));
  EXPECT_EQ(enqueues[1].seq, std::optional<std::uint64_t>(2));
  EXPECT_EQ(enqueues[2].mode, delivery_mode::at_most_once);
  EXPECT_EQ(bodies, (std::vector<std::string>{"a", "b", "x"}));
  auto pulls = only<mqs::pull_request>(rs);
  ASSERT_EQ(pulls.size(), 1u);
  EXPECT_EQ(pulls[0].topic, reply_topic(options.instance));
  EXPECT_EQ(pulls[0].mode, delivery_mode::reply);
  EXPECT_EQ(pulls[0].credit, 16u);
  EXPECT_FALSE(stats().linked) << "not before the MQS's welcome";
  from_mqs(c, welcome());
  EXPECT_TRUE(stats().linked);
}

TEST_F(TopLevelTest, AfterALostLinkOnlyWhatTheMqsHadNotConfirmedIsSentAgainOnTheNextConnection) {
  start();
  auto c1 = open(1);
  from_mqs(c1, welcome());
  for (auto* b : {"a", "b", "c"}) enqueue(b);
  poll();
  EXPECT_EQ(only<mqs::enqueue_request>(requests(*c1)).size(), 3u);
  from_mqs(c1, confirm({1, 3}));
  EXPECT_EQ(stats().confirmed, 2u);

  link->on_close(c1, "MQS went away");
  poll();
  auto s = stats();
  EXPECT_FALSE(s.linked);
  EXPECT_NE(s.link_error.find("MQS went away"), std::string::npos) << s.link_error;
  // The reconnect comes after the backoff (100 ms at most): wait for that attempt, nothing else.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (attempts.size() < 2 && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
  io.restart();
  ASSERT_EQ(attempts.size(), 2u) << "connects again";

  auto c2 = open(2);
  std::vector<std::string> bodies;
  auto enqueues = only<mqs::enqueue_request>(requests(*c2, &bodies));
  ASSERT_EQ(enqueues.size(), 1u);
  EXPECT_EQ(enqueues[0].seq, std::optional<std::uint64_t>(2));
  EXPECT_EQ(bodies, (std::vector<std::string>{"b"}));
  s = stats();
  EXPECT_EQ(s.resent, 1u);
  EXPECT_EQ(s.reconnects, 1u);
  from_mqs(c1, confirm({2}));  // a late record of the old connection: ignored
  EXPECT_EQ(stats().confirmed, 2u);
  from_mqs(c2, confirm({2}));
  EXPECT_EQ(stats().confirmed, 3u);
}

TEST_F(TopLevelTest, NoMessageToTheMqsComesNearItsMaxFrameNeitherABurstNorTheWindowReplayed) {
  // The MQS closes a link whose WebSocket message is over --max-frame (16 MiB by default): big
  // enqueues go out in messages of about a MiB, in order, after the hello.
  const std::string big(512 * 1024, 'x');
  start();
  for (int i = 0; i < 40; ++i) enqueue(big + std::to_string(i));  // 20 MiB waiting for a link
  poll();
  auto c = open(1);
  auto sizes = [](const recording_connection& conn) {
    std::vector<std::size_t> out;
    for (auto& m : conn.sent) out.push_back(m.size());
    return out;
  };
  for (auto size : sizes(*c)) EXPECT_LT(size, 2u << 20) << "one WebSocket message of the replay";
  std::vector<std::string> bodies;
  auto rs = requests(*c, &bodies);
  ASSERT_FALSE(rs.empty());
  EXPECT_TRUE(std::holds_alternative<mqs::hello_request>(rs[0])) << "the hello first";
  ASSERT_EQ(bodies.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bodies[std::size_t(i)], big + std::to_string(i));
  from_mqs(c, welcome());

  for (int i = 0; i < 40; ++i) enqueue(big + std::to_string(i), delivery_mode::at_most_once);  // one burst
  poll();
  auto burst = sizes(*c);
  EXPECT_GE(burst.size(), 10u);
  for (auto size : burst) EXPECT_LT(size, 2u << 20) << "one WebSocket message of the burst";
  bodies.clear();
  requests(*c, &bodies);
  ASSERT_EQ(bodies.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(bodies[std::size_t(i)], big + std::to_string(i));
}

TEST_F(TopLevelTest, AnMqsThatStaysDownIsTriedAgainAtLeastEveryHalfSecond) {
  // Every attempt fails at once, as a refused connect does; the times between them are the backoff.
  std::vector<std::chrono::steady_clock::time_point> times;
  options.connect = [&](const net::ws_url&, std::shared_ptr<net::ws_handler>,
                        std::function<void(const std::string&)> fail) {
    times.push_back(std::chrono::steady_clock::now());
    fail("connection refused");
  };
  start();
  // 100, 200, 400, then 500 ms (jittered down by up to 20%), never 800 or 1600 ms.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (times.size() < 6 && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
  io.restart();
  ASSERT_GE(times.size(), 6u);
  // Each wait is 500 ms at most; the slack is a loaded machine's timer lateness (a 1600 ms wait
  // jittered down by 20% would still be 1280 ms).
  for (std::size_t i = 1; i < 6; ++i) EXPECT_LT(times[i] - times[i - 1], 1000ms) << "attempt " << i + 1;
  EXPECT_FALSE(stats().linked);
}

TEST_F(TopLevelTest, AWebSocketMessagesDeliveriesReachEachPoolInOneHandOverInTheirOrder) {
  start();
  auto sink = std::make_shared<recording_sink>();
  auto other = std::make_shared<recording_sink>();
  link->attach(topic, sink);
  link->attach("s.other", other);
  auto c1 = open(1);
  std::string batch;
  for (std::uint64_t tag = 1; tag <= 40; ++tag)  // binary headers (as this host asks) and JSON ones
    mqs::append_deliver(batch, tag % 5 == 0 ? "s.other" : topic, tag, false, "m" + std::to_string(tag), {},
                        tag % 2 ? mqs::deliver_header::binary : mqs::deliver_header::json);
  from_mqs(c1, batch);
  EXPECT_EQ(sink->batches, 1);
  EXPECT_EQ(other->batches, 1);
  ASSERT_EQ(sink->deliveries.size(), 32u);
  ASSERT_EQ(other->deliveries.size(), 8u);
  std::uint64_t last = 0;
  for (auto& d : sink->deliveries) {
    EXPECT_GT(d.tag, last) << "in the order they came";
    last = d.tag;
    EXPECT_EQ(d.body, "m" + std::to_string(d.tag));
  }
  EXPECT_EQ(other->deliveries.front().tag, 5u);
  from_mqs(c1, batch);
  EXPECT_EQ(sink->batches, 2) << "the next WebSocket message is a hand-over of its own";
  EXPECT_EQ(sink->deliveries.size(), 64u);
}

TEST_F(TopLevelTest, DeliveriesGoToTheirPoolWithTheirGenerationAndOnlyTheCurrentGenerationsAcksGoOut) {
  start();
  auto sink = std::make_shared<recording_sink>();
  link->attach(topic, sink);
  auto c1 = open(1);
  EXPECT_EQ(sink->connected, 1) << "a pool pulls again on each connection";
  std::string batch;
  mqs::message_props stamped;
  stamped.published_us = 1'790'000'000'000'001;
  mqs::append_deliver(batch, topic, 5, false, "m", stamped);
  mqs::append_deliver(batch, "s.gone", 6, false, "n");  // no pool of that topic here
  from_mqs(c1, batch);
  ASSERT_EQ(sink->deliveries.size(), 1u);
  EXPECT_EQ(sink->deliveries[0].generation, 1u);
  EXPECT_EQ(sink->deliveries[0].tag, 5u);
  EXPECT_EQ(sink->deliveries[0].body, "m");
  EXPECT_EQ(sink->deliveries[0].published_us, 1'790'000'000'000'001u)
      << "the MQS's publish stamp goes with it";
  auto nacks = only<mqs::nack_request>(requests(*c1));
  ASSERT_EQ(nacks.size(), 1u) << "a message for a pool that is gone goes back";
  EXPECT_EQ(nacks[0].tags, (std::vector<std::uint64_t>{6}));
  EXPECT_TRUE(nacks[0].requeue);

  link->on_close(c1, "dropped");
  auto c2 = open(2);
  EXPECT_EQ(sink->connected, 2);
  requests(*c2);
  link->ack(1, 5);  // the MQS gave that message back when the first link dropped
  link->nack(1, 5, true);
  poll();
  EXPECT_TRUE(requests(*c2).empty()) << "a tag of an earlier connection never reaches the new one";
  link->ack(2, 7);
  link->ack(2, 8);
  poll();
  auto acks = only<mqs::ack_request>(requests(*c2));
  ASSERT_EQ(acks.size(), 1u) << "acks of one turn go out together";
  EXPECT_EQ(acks[0].tags, (std::vector<std::uint64_t>{7, 8}));
}

// A worker's reply reaches the link first and its router's ack one hop later (the router's strand,
// then the link's): both leave in one WebSocket message, not one each.
TEST_F(TopLevelTest, AReplyAndTheAckItsRouterSendsAHopLaterLeaveInOneWebSocketMessage) {
  start();
  auto c = open(1);
  from_mqs(c, welcome());
  c->take();
  boost::asio::post(io, [&] {  // the worker's turn
    enqueue("reply", delivery_mode::at_most_once);
    boost::asio::defer(io, [&] { link->ack(1, 5); });  // its router's, after it
  });
  poll();
  ASSERT_EQ(c->sent.size(), 1u) << "the reply and the ack went out in " << c->sent.size() << " messages";
  auto rs = requests(*c);
  EXPECT_EQ(only<mqs::enqueue_request>(rs).size(), 1u);
  auto acks = only<mqs::ack_request>(rs);
  ASSERT_EQ(acks.size(), 1u);
  EXPECT_EQ(acks[0].tags, (std::vector<std::uint64_t>{5}));
}

TEST_F(TopLevelTest, WritersHeldByTheWindowWakeOnceConfirmsBringItToHalf) {
  start();
  auto c = open(1);
  from_mqs(c, welcome());
  for (auto* b : {"a", "b", "c", "d"}) enqueue(b);
  int woken = 0;
  link->when_writable([&] { ++woken; });
  poll();
  EXPECT_EQ(woken, 0) << "4 unconfirmed fill a window of 4";
  from_mqs(c, confirm({1}));
  EXPECT_EQ(woken, 0) << "3 unconfirmed: not yet half";
  from_mqs(c, confirm({2}));
  EXPECT_EQ(woken, 1);
}

TEST_F(TopLevelTest, ADepthQuestionIsAnsweredByTheMqsOrAtOnceWithoutALinkOrWhenTheLinkDrops) {
  start();
  std::vector<std::string> answers;
  auto ask = [&] {
    link->queue_depth(topic, [&](std::uint64_t messages, std::uint64_t, std::string error) {
      answers.push_back(error.empty() ? std::to_string(messages) : error);
    });
    poll();
  };
  ask();
  EXPECT_EQ(answers, (std::vector<std::string>{"no MQS link"}));
  auto c = open(1);
  from_mqs(c, welcome());
  requests(*c);
  ask();
  EXPECT_EQ(only<mqs::depth_request>(requests(*c)).size(), 1u);
  std::string batch;
  mqs::append_depth(batch, topic, 42, 1, "");
  from_mqs(c, batch);
  EXPECT_EQ(answers.back(), "42");
  ask();
  link->on_close(c, "dropped");
  poll();
  EXPECT_EQ(answers.back(), "the MQS link dropped before it answered");
  EXPECT_EQ(answers.size(), 3u);
}

TEST_F(TopLevelTest, StopWaitsForTheLastConfirmThenClosesTheLink) {
  start();
  auto c = open(1);
  from_mqs(c, welcome());
  enqueue("a");
  bool stopped = false;
  link->stop(10s, [&] { stopped = true; });
  poll();
  EXPECT_TRUE(c->closed.empty()) << "not while a message is unconfirmed";
  from_mqs(c, confirm({1}));
  EXPECT_EQ(c->closed, "isolate system stopping");
  EXPECT_FALSE(stopped) << "stopped once the link has closed";
  link->on_close(c, "closed");
  poll();
  EXPECT_TRUE(stopped);
}

TEST_F(TopLevelTest, AFreshDeployWaitsForTheLinkAndHearsWhenItIsUp) {
  start();
  std::optional<std::string> heard;
  link->when_linked(60s, [&](std::string error) { heard = std::move(error); });
  poll();
  EXPECT_FALSE(heard) << "no MQS has welcomed this host yet";
  auto c = open(1);
  poll();
  EXPECT_FALSE(heard) << "open, but not welcomed yet";
  from_mqs(c, welcome());
  ASSERT_TRUE(heard);
  EXPECT_EQ(*heard, "");
  std::optional<std::string> again;
  link->when_linked(60s, [&](std::string error) { again = std::move(error); });
  poll();
  EXPECT_EQ(again, std::optional<std::string>("")) << "already linked: at once";
}

TEST_F(TopLevelTest, AFreshDeployHearsWhyWhenNoMqsWelcomesItInTime) {
  start();
  std::optional<std::string> heard;
  link->when_linked(20ms, [&](std::string error) { heard = std::move(error); });
  while (!heard) io.run_one();  // the timer's expiry is the event this waits for
  io.restart();
  EXPECT_EQ(*heard, "no link to the MQS within 20 ms (connecting to MQS ws://127.0.0.1:1/mqs)");
  auto s = stats();
  EXPECT_FALSE(s.linked);
  EXPECT_FALSE(s.link_error.empty());
}

}  // namespace
}  // namespace dde::host
