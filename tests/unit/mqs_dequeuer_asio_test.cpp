// The dequeuer's loop on an io_context (dequeuer_asio.cpp) over the fake broker, whose sessions have
// a pipe for a socket: the broker's frames are read because the reactor saw their socket readable
// (not on the once-a-second read of every link), a host's records start a turn, a session opened
// again on the same fd numbers is watched, and stop() sends the acks a host sent last.
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "dde/protocol/mqs_records.hpp"
#include "dde/wire/record.hpp"
#include "dequeuer.hpp"
#include "fake_amqp_session.hpp"

namespace dde::mqs {
namespace {

using namespace std::chrono_literals;
using namespace testing;
using steady = std::chrono::steady_clock;

/// A host's end that the test can wait on: send() comes from the loop's thread.
class waiting_connection final : public net::ws_connection {
 public:
  void send(std::string data, bool) override {
    {
      std::lock_guard l(mutex_);
      auto decoded = wire::decode_batch(data, std::size_t(1) << 24);
      EXPECT_TRUE(decoded.error.empty()) << decoded.error;
      for (auto& r : decoded.records) {
        auto parsed = parse_mqs_record(r.header);
        auto* d = parsed ? std::get_if<deliver_record>(&parsed.value()) : nullptr;
        if (d)
          delivered_.emplace_back(d->tag, std::string(r.body));
        else
          ADD_FAILURE() << "a record other than a delivery: " << r.header;
      }
    }
    sent_.notify_all();
  }
  void close(std::string) override {}
  void pause_reading(bool) override {}
  std::size_t queued_bytes() const override { return 0; }
  const std::string& remote() const override { return remote_; }
  std::uint64_t id() const override { return 3; }

  /// The deliveries (the MQS's tag, the body) once there are at least `n`, or after `limit`.
  std::vector<std::pair<std::uint64_t, std::string>> deliveries(std::size_t n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock l(mutex_);
    sent_.wait_for(l, limit, [&] { return delivered_.size() >= n; });
    return delivered_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable sent_;
  std::vector<std::pair<std::uint64_t, std::string>> delivered_;
  std::string remote_ = "127.0.0.1:1";
};

class DequeuerOnAsioTest : public ::testing::Test {
 protected:
  DequeuerOnAsioTest() {
    cfg.prefetch = 8;
    broker.pipes = true;
  }
  ~DequeuerOnAsioTest() override {
    stop();
    guard.reset();
    io.stop();
    if (runner.joinable()) runner.join();
  }

  void start() {
    deq = std::make_unique<dequeuer>(cfg, "mqs-test", broker_env{broker.opener()});
    deq->set_opener([](std::function<void()> job) { job(); });  // on the loop: the fakes stay on one thread
    deq->start(io);
    runner = std::thread([this] { io.run(); });
  }
  void stop() {
    if (deq) deq->stop();  // io still runs: the last turn runs on the loop
  }
  /// Runs `f` on the loop's thread (the fakes' thread) and returns what it returns.
  template <class F>
  auto on_loop(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io, [&task] { task(); });
    return result.get();
  }
  void submit(dequeue_command cmd) {
    cmd.conn = host;
    std::vector<dequeue_command> batch;
    batch.push_back(std::move(cmd));
    deq->submit(std::move(batch));
  }
  void pull(std::uint32_t credit, delivery_mode mode) {
    dequeue_command c;
    c.what = dequeue_command::kind::pull;
    c.topic = topic;
    c.mode = mode;
    c.credit = credit;
    c.consumers = 1;
    submit(std::move(c));
  }
  /// The topic's session once it consumes (a later one than session `after`, by serial: a new
  /// session may take a closed one's address), and its consumer tag; waits for it up to 5 s.
  std::pair<fake_session*, std::string> consuming(std::uint64_t after = 0) {
    auto until = steady::now() + 5s;
    while (steady::now() < until) {
      auto found = on_loop([&] {
        auto* s = broker.find(std::string(" ") + topic);
        std::string tag;
        if (s && s->serial() > after)
          for (auto& r : s->rpcs)
            if (r.rfind("basic.consume 1 s.consumer ", 0) == 0) tag = r.substr(std::strlen("basic.consume 1 s.consumer "));
        return std::make_pair(tag.empty() ? nullptr : s, tag);
      });
      if (found.first) return found;
      std::this_thread::yield();
    }
    return {nullptr, {}};
  }
  /// Has the broker send `count` deliveries one after another, each once the last reached the host.
  /// Returns how long they took.
  steady::duration deliver_one_by_one(fake_session* s, const std::string& tag, int count, std::uint64_t first_tag) {
    auto t0 = steady::now();
    auto before = host->deliveries(0, 0ms).size();
    for (int i = 0; i < count; ++i) {
      on_loop([&] { s->deliver(1, tag, first_tag + std::uint64_t(i), "m" + std::to_string(i)); });
      auto got = host->deliveries(before + std::size_t(i) + 1);
      if (got.size() < before + std::size_t(i) + 1) {
        ADD_FAILURE() << "delivery " << i << " did not reach the host within 5 s";
        break;
      }
    }
    return steady::now() - t0;
  }

  fake_broker broker;
  config cfg;
  std::shared_ptr<waiting_connection> host = std::make_shared<waiting_connection>();
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread runner;
  std::unique_ptr<dequeuer> deq;
};

TEST_F(DequeuerOnAsioTest, BrokerFramesAreReadAsTheirSocketBecomesReadableNotOnTheSweep) {
  start();
  pull(20, delivery_mode::at_most_once);
  auto [s, tag] = consuming();
  ASSERT_NE(s, nullptr) << "the topic was not consumed within 5 s";
  // Read only on the once-a-second sweep, ten deliveries one after another would take ten seconds.
  auto took = deliver_one_by_one(s, tag, 10, 1);
  EXPECT_LT(took, 4s) << "frames waited for the sweep: the socket is not watched";
  EXPECT_EQ(host->deliveries(10).size(), 10u);
}

TEST_F(DequeuerOnAsioTest, ATopicConnectionOpenedAgainOnTheSameFdNumbersIsWatchedAgain) {
  start();
  pull(20, delivery_mode::at_most_once);
  auto [first, tag] = consuming();
  ASSERT_NE(first, nullptr);
  auto [old_fd, old_serial] = on_loop([s = first] { return std::make_pair(s->fd(), s->serial()); });
  EXPECT_EQ(deliver_one_by_one(first, tag, 1, 1) < 4s, true);
  on_loop([s = first] { s->drop(); });  // the socket fails: the link is lost, opened again after 100 ms
  auto [second, tag2] = consuming(old_serial);
  ASSERT_NE(second, nullptr) << "the topic was not consumed again within 5 s";
  int new_fd = on_loop([s = second] { return s->fd(); });
  // The old pipe closed before the new one opened: its numbers come back, and the watch of the old
  // socket (a dup of it) must be gone, not taken for the new one's.
  EXPECT_EQ(new_fd, old_fd);
  auto took = deliver_one_by_one(second, tag2, 5, 1);
  EXPECT_LT(took, 3s) << "the new session's socket is not watched";
  EXPECT_EQ(host->deliveries(6).size(), 6u);
}

TEST_F(DequeuerOnAsioTest, TheAcksAHostSentLastReachTheBrokerWhenTheDequeuerStops) {
  start();
  pull(20, delivery_mode::at_least_once);
  auto [s, tag] = consuming();
  ASSERT_NE(s, nullptr);
  on_loop([&, s = s, tag = tag] {
    s->deliver(1, tag, 1, "a");
    s->deliver(1, tag, 2, "b");
  });
  auto got = host->deliveries(2);
  ASSERT_EQ(got.size(), 2u);
  dequeue_command ack;
  ack.what = dequeue_command::kind::ack;
  ack.tags = {got[0].first, got[1].first};
  submit(std::move(ack));
  deq->stop();
  auto acks = on_loop([&] {
    std::vector<settlement> out;
    for (auto& [name, a] : broker.closed_acks)
      if (name == std::string("dde-mqs dequeuer ") + topic) out.insert(out.end(), a.begin(), a.end());
    return out;
  });
  EXPECT_EQ(acks, (std::vector<settlement>{{1, 2, true}})) << "one ack with multiple, sent before the link closed";
}

}  // namespace
}  // namespace dde::mqs
