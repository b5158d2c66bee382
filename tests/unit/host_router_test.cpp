// The router without processes or a broker: real worker cells running a real plugin (faulty) on one
// io_context that the test drives step by step, and a fake MQS link that records what the router asks
// of it. Each test delivers what it needs and runs the io_context until nothing is left to do.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "dde/protocol/pool_spec.hpp"
#include "host/mqs_link.hpp"
#include "host/router.hpp"

namespace dde::host {
namespace {

struct pull_call {
  std::string topic;
  delivery_mode mode;
  std::size_t credit;
  std::uint32_t consumers;
};

/// Records every call; answers depth questions with nothing (no autoscaling here).
class fake_link : public mqs_link {
 public:
  void enqueue(std::string topic, delivery_mode, std::string, std::string body) override {
    enqueued.emplace_back(std::move(topic), std::move(body));
  }
  void pull(const std::string& topic, delivery_mode mode, std::size_t credit, std::uint32_t consumers) override {
    pulls.push_back({topic, mode, credit, consumers});
  }
  void ack(std::uint64_t generation, std::uint64_t tag) override { acks.emplace_back(generation, tag); }
  void nack(std::uint64_t, std::uint64_t tag, bool requeue) override { nacks.emplace_back(tag, requeue); }
  void cancel(const std::string& topic) override { cancelled.push_back(topic); }
  void pause(const std::string&, std::chrono::milliseconds, const std::string&) override {}
  void attach(const std::string& topic, std::weak_ptr<topic_sink> s) override {
    attached = topic;
    sink = std::move(s);
  }
  void detach(const std::string&) override { sink.reset(); }
  void set_pause_handler(const std::string&, pause_handler) override {}
  void queue_depth(const std::string&, depth_handler fn) override { fn(0, 0, "no depth in this test"); }
  void when_writable(std::function<void()> fn) override { fn(); }
  const std::string& instance() const override { return instance_; }

  std::size_t credit_asked() const {
    std::size_t n = 0;
    for (auto& p : pulls) n += p.credit;
    return n;
  }

  std::vector<pull_call> pulls;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> acks;  ///< (generation, tag)
  std::vector<std::pair<std::uint64_t, bool>> nacks;          ///< (tag, requeue)
  std::vector<std::string> cancelled;
  std::vector<std::pair<std::string, std::string>> enqueued;
  std::string attached;
  std::weak_ptr<topic_sink> sink;

 private:
  std::string instance_ = "00000000-0000-0000-0000-000000000001";
};

class RouterTest : public ::testing::Test {
 protected:
  /// A pool of `workers` faulty workers (throwing on the seqs in `throw_on`), started.
  std::shared_ptr<router> start_pool(std::size_t workers, nlohmann::json extra = nlohmann::json::object(),
                                     std::vector<int> throw_on = {}) {
    nlohmann::json body = {{"isolateSystemName", "unit"},
                           {"isolateName", "pool"},
                           {"uri", std::string(DDE_WORKER_DIR) + "/libfaulty.so"},
                           {"workersPaths", std::vector<std::string>(workers, "localhost")},
                           {"hotDeployment", false},
                           {"args", {{"throw_on", throw_on}}}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    auto spec = parse_pool_spec(body);
    EXPECT_TRUE(spec) << spec.error();
    auto r = std::make_shared<router>(io, link, spec.value());
    auto started = r->start();
    EXPECT_TRUE(started) << (started ? "" : started.error());
    settle();
    return r;
  }

  /// Runs every handler that is ready until none is left: the pool has done all it can.
  void settle() {
    for (int round = 0; round < 1000; ++round) {
      io.restart();
      if (io.poll() == 0) return;
    }
    FAIL() << "the io_context never went idle";
  }

  void deliver(std::uint64_t tag, int seq, bool redelivered = false) {
    auto s = link->sink.lock();
    ASSERT_TRUE(s) << "the router attached itself to the link";
    s->deliver(1, tag, redelivered, nullptr, nlohmann::json{{"seq", seq}}.dump());
    settle();
  }

  nlohmann::json describe(router& r) {
    nlohmann::json out;
    r.describe([&](nlohmann::json d) { out = std::move(d); });
    settle();
    return out;
  }

  boost::asio::io_context io;
  std::shared_ptr<fake_link> link = std::make_shared<fake_link>();
};

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
  deliver(7, 1);
  deliver(8, 2);
  EXPECT_EQ(link->acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{1, 7}, {1, 8}}));
  EXPECT_TRUE(link->nacks.empty());
  EXPECT_EQ(link->credit_asked(), 8u + 2u) << "each message done gives its credit back";
  auto d = describe(*r);
  EXPECT_EQ(d["stats"]["delivered"], 2);
  EXPECT_EQ(d["stats"]["acked"], 2);
}

TEST_F(RouterTest, ARedeliveredMessageIsCounted) {
  auto r = start_pool(1);
  deliver(3, 1, true);
  EXPECT_EQ(describe(*r)["stats"]["redelivered"], 1);
}

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
}

TEST_F(RouterTest, ThePoolStopsAfterMaxRestartsWithinTheWindowAndStopsConsuming) {
  auto r = start_pool(1, {{"supervision", {{"strategy", "restart"}, {"maxRestarts", 2}, {"withinMs", 60000}}}},
                      {5, 6, 7});
  deliver(1, 5);
  deliver(2, 6);
  EXPECT_TRUE(link->cancelled.empty()) << "two restarts are allowed";
  deliver(3, 7);
  EXPECT_EQ(link->cancelled, std::vector<std::string>{"unit.pool"});
  auto d = describe(*r);
  EXPECT_EQ(d["poolState"].get<std::string>().rfind("stopped: 2 restarts within 60000 ms", 0), 0u) << d.dump();
  EXPECT_EQ(d["stats"]["restarts"], 2);
}

TEST_F(RouterTest, AReconnectedLinkIsAskedForEveryCreditAgain) {
  auto r = start_pool(2, {{"credits", 3}});
  ASSERT_EQ(link->credit_asked(), 6u);
  link->pulls.clear();
  link->sink.lock()->on_connected();
  settle();
  EXPECT_EQ(link->credit_asked(), 6u) << "credits asked of the old connection are void";
}

}  // namespace
}  // namespace dde::host
