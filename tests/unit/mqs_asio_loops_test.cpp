// The broker loops on an io_context (strand_loop.cpp) over the fake broker. The dequeuer's
// (dequeuer_loop.cpp), whose sessions have a pipe for a socket: the broker's frames are read because
// the reactor saw their socket readable (not on the once-a-second read of every link), a host's
// records start a turn, a session opened again on the same fd numbers is watched, and stop() sends
// the acks a host sent last. The enqueuer's
// (enqueuer_loop.cpp), whose session has a real socket with a small buffer: a burst the socket
// cannot take waits for room without holding up the loop's thread or letting anything else reach
// the socket first, confirms are read as they come, a publishing turn reads the socket only when it
// said it had something, and stop() publishes what hosts handed over, on the loop or once io's
// threads returned.
#include <gtest/gtest.h>
#include <poll.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "dde/protocol/mqs_records.hpp"
#include "dde/wire/record.hpp"
#include "dequeuer.hpp"
#include "enqueuer.hpp"
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
        EXPECT_TRUE(parsed) << r.header;
        if (parsed) records_.emplace_back(std::move(parsed.value()), std::string(r.body));
      }
    }
    sent_.notify_all();
  }
  void close(std::string) override {}
  void pause_reading(bool) override {}
  std::size_t queued_bytes() const override { return 0; }
  const std::string& remote() const override { return remote_; }
  std::uint64_t id() const override { return 3; }

  /// The records of type R (with their bodies) once there are at least `n`, or after `limit`.
  template <class R>
  std::vector<std::pair<R, std::string>> of(std::size_t n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock l(mutex_);
    std::vector<std::pair<R, std::string>> out;
    sent_.wait_for(l, limit, [&] {
      out.clear();
      for (auto& [r, body] : records_)
        if (auto* x = std::get_if<R>(&r)) out.emplace_back(*x, body);
      return out.size() >= n;
    });
    return out;
  }
  /// The deliveries (the MQS's tag, the body) once there are at least `n`, or after `limit`.
  std::vector<std::pair<std::uint64_t, std::string>> deliveries(std::size_t n,
                                                                std::chrono::milliseconds limit = 5s) {
    std::vector<std::pair<std::uint64_t, std::string>> out;
    for (auto& [d, body] : of<deliver_record>(n, limit)) out.emplace_back(d.tag, body);
    return out;
  }
  /// The seqs confirmed, once there are at least `n`, or after `limit`.
  std::vector<std::uint64_t> confirmed(std::size_t n, std::chrono::milliseconds limit = 5s) {
    std::unique_lock l(mutex_);
    std::vector<std::uint64_t> out;
    sent_.wait_for(l, limit, [&] {
      out.clear();
      for (auto& [r, body] : records_)
        if (auto* c = std::get_if<confirm_record>(&r)) out.insert(out.end(), c->seqs.begin(), c->seqs.end());
      return out.size() >= n;
    });
    return out;
  }

 private:
  std::mutex mutex_;
  std::condition_variable sent_;
  std::vector<std::pair<mqs_record, std::string>> records_;
  std::string remote_ = "127.0.0.1:1";
};

/// An io_context run by one thread of the test (the fakes are touched on it only) and a host.
class AsioLoopTest : public ::testing::Test {
 protected:
  ~AsioLoopTest() override { stop_io(); }

  void run_io() {
    runner = std::thread([this] { io.run(); });
  }
  void stop_io() {
    guard.reset();
    io.stop();
    if (runner.joinable()) runner.join();
  }
  /// Runs `f` on the loop's thread (the fakes' thread) and returns what it returns; fails rather
  /// than hangs when that thread does not come to it within 5 s.
  template <class F>
  auto on_loop(F f) -> decltype(f()) {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    boost::asio::post(io, [task] { (*task)(); });
    if (result.wait_for(5s) != std::future_status::ready) {
      ADD_FAILURE() << "the loop's thread did not run a handler within 5 s";
      std::abort();  // it still holds `f`'s references: nothing sensible can follow
    }
    return result.get();
  }

  fake_broker broker;
  config cfg;
  std::shared_ptr<waiting_connection> host = std::make_shared<waiting_connection>();
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
  std::thread runner;
};

class DequeuerOnAsioTest : public AsioLoopTest {
 protected:
  DequeuerOnAsioTest() {
    cfg.prefetch = 8;
    broker.pipes = true;
  }
  ~DequeuerOnAsioTest() override {
    if (deq) deq->stop();  // io still runs: the last turn runs on the loop
  }

  void start() {
    deq = std::make_unique<dequeuer>(cfg, "mqs-test", broker_env{broker.opener()});
    deq->set_opener([](std::function<void()> job) { job(); });  // on the loop: the fakes stay on one thread
    deq->start(io);
    run_io();
  }
  void submit(dequeue_command cmd) { deq->submit({std::move(cmd)}); }
  void pull(std::uint32_t credit, delivery_mode mode) { submit(dequeue::pull{host, topic, mode, credit, 1}); }
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
            if (r.rfind("basic.consume 1 s.consumer ", 0) == 0)
              tag = r.substr(std::strlen("basic.consume 1 s.consumer "));
        return std::make_pair(tag.empty() ? nullptr : s, tag);
      });
      if (found.first) return found;
      std::this_thread::yield();
    }
    return {nullptr, {}};
  }
  /// Has the broker send `count` deliveries one after another, each once the last reached the host.
  /// Returns how long they took.
  steady::duration deliver_one_by_one(fake_session* s, const std::string& tag, int count,
                                      std::uint64_t first_tag) {
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
  submit(dequeue::ack{host, {got[0].first, got[1].first}});
  deq->stop();
  auto acks = on_loop([&] {
    std::vector<settlement> out;
    for (auto& [name, a] : broker.closed_acks)
      if (name == std::string("dde-mqs dequeuer ") + topic) out.insert(out.end(), a.begin(), a.end());
    return out;
  });
  EXPECT_EQ(acks, (std::vector<settlement>{{1, 2, true}}))
      << "one ack with multiple, sent before the link closed";
}

/// What reached the broker's end of a fake socket: whole AMQP frames, the publishes' bodies in order.
class broker_end {
 public:
  broker_end() = default;
  broker_end(const broker_end&) = delete;
  broker_end& operator=(const broker_end&) = delete;
  ~broker_end() {
    if (fd >= 0) ::close(fd);
  }
  /// Reads what is there now (or waits up to `limit` for some); the bodies of publishes received so far.
  const std::vector<std::string>& read(std::chrono::milliseconds limit = 0ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, int(limit.count())) > 0) {
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) bytes.append(buf, std::size_t(n));
    }
    parse();
    return bodies;
  }
  /// Reads until `n` bodies came, at most `limit`.
  const std::vector<std::string>& read_until(std::size_t n, std::chrono::milliseconds limit = 10s) {
    auto until = steady::now() + limit;
    while (bodies.size() < n && steady::now() < until) read(100ms);
    return bodies;
  }

  int fd = -1;
  std::vector<std::string> bodies;
  std::size_t frames = 0;
  std::string bytes;  ///< not parsed yet (part of a frame)

 private:
  void parse() {
    // type (1), channel (2), size (4), payload, frame-end 0xCE.
    while (bytes.size() >= 8) {
      auto u8 = [&](std::size_t i) { return std::uint32_t(static_cast<unsigned char>(bytes[i])); };
      std::uint32_t size = u8(3) << 24 | u8(4) << 16 | u8(5) << 8 | u8(6);
      if (bytes.size() < 8 + std::size_t(size)) return;
      EXPECT_EQ(u8(7 + size), 0xCEu) << "frame " << frames
                                     << " does not end where it says: frames interleaved";
      if (u8(0) == AMQP_FRAME_BODY) bodies.push_back(bytes.substr(7, size));
      ++frames;
      bytes.erase(0, 8 + std::size_t(size));
    }
  }
};

class EnqueuerOnAsioTest : public AsioLoopTest {
 protected:
  EnqueuerOnAsioTest() { broker.sockets = true; }
  ~EnqueuerOnAsioTest() override {
    if (enq) enq->stop();
  }

  void start() {
    enq = std::make_unique<enqueuer>(cfg, flow, broker_env{broker.opener()});
    enq->start(io);
    run_io();
  }
  /// The enqueuer's session, once connected (waits up to 5 s).
  fake_session* session() {
    auto until = steady::now() + 5s;
    while (steady::now() < until) {
      if (auto* s = on_loop([&] { return broker.find("enqueuer"); })) {
        end.fd = on_loop([s] { return ::dup(s->peer()); });  // readable after the session closed
        return s;
      }
      std::this_thread::yield();
    }
    return nullptr;
  }
  void send(std::uint64_t first, int count, delivery_mode mode, std::size_t size = 16) {
    std::vector<outgoing_message> batch;
    for (int i = 0; i < count; ++i) {
      auto seq = first + std::uint64_t(i);
      auto body = "m" + std::to_string(seq) + ":";
      body.resize(std::max(size, body.size()), 'x');
      flow.add(1, body.size());
      batch.push_back(outgoing_message{host, topic, mode, seq, std::move(body), {}, {}});
    }
    enq->submit(std::move(batch));
  }
  /// Waits until `pred` (run on the loop's thread) holds, at most 5 s.
  bool eventually(const std::function<bool()>& pred) {
    auto until = steady::now() + 5s;
    while (steady::now() < until) {
      if (on_loop(pred)) return true;
      std::this_thread::sleep_for(1ms);  // polling a state no event announces to the test
    }
    return false;
  }

  flow_control flow{100000, std::size_t(1) << 30};
  std::unique_ptr<enqueuer> enq;
  broker_end end;
};

TEST_F(EnqueuerOnAsioTest, ABurstTheSocketCannotTakeWaitsForRoomWithoutHoldingUpTheLoopsThread) {
  start();
  auto* s = session();
  ASSERT_NE(s, nullptr) << "the enqueuer did not connect within 5 s";
  send(1, 500, delivery_mode::at_most_once, 1000);  // ~520 kB of frames into a socket of a few kB
  ASSERT_TRUE(eventually([&] { return enq->wants_write(); })) << "the burst never filled the socket";
  // The loop's thread runs other handlers meanwhile (on_loop's), and nothing else of the enqueuer
  // reaches the broker: a depth query (an RPC through rabbitmq-c) waits for the frames to be written.
  std::vector<depth_query> q;
  q.push_back({host, topic});
  enq->ask_depth(std::move(q));
  on_loop([] { return 0; });  // the turn the query scheduled ran before this
  EXPECT_TRUE(on_loop([&] { return enq->wants_write() && s->count("queue.declare-passive") == 0; }))
      << "an RPC was made while a frame was half written";
  auto& bodies = end.read_until(500);
  ASSERT_EQ(bodies.size(), 500u) << "the rest of the burst was not written as the socket made room";
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    auto want = "m" + std::to_string(i + 1) + ":";
    ASSERT_EQ(bodies[i].substr(0, want.size()), want) << "body " << i << " out of order";
    ASSERT_EQ(bodies[i].size(), 1000u);
  }
  EXPECT_TRUE(end.bytes.empty()) << "a frame was cut short";
  auto depth = host->of<depth_record>(1);
  ASSERT_EQ(depth.size(), 1u) << "the depth query was never answered";
  EXPECT_EQ(depth[0].first.error, "");
  EXPECT_TRUE(eventually([&] { return flow.messages() == 0; })) << "the published messages stay counted";
}

TEST_F(EnqueuerOnAsioTest, ConfirmsAreReadAsTheirSocketBecomesReadableNotOnTheIdleTimeout) {
  start();
  auto* s = session();
  ASSERT_NE(s, nullptr);
  // Read only when the loop's idle turn comes (every second), ten confirms one after another would
  // take ten seconds.
  auto t0 = steady::now();
  for (std::uint64_t i = 1; i <= 10; ++i) {
    send(i, 1, delivery_mode::at_least_once);
    ASSERT_EQ(end.read_until(i, 5s).size(), i) << "publish " << i << " did not reach the broker";
    on_loop([s, i] {
      s->confirm(i, false);
      return 0;
    });
    ASSERT_EQ(host->confirmed(i).size(), i) << "confirm " << i << " did not reach the host within 5 s";
  }
  EXPECT_LT(steady::now() - t0, 4s) << "confirms waited for the idle timeout: the socket is not watched";
  EXPECT_EQ(host->confirmed(10), (std::vector<std::uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
}

TEST_F(EnqueuerOnAsioTest, APublishingTurnReadsTheSocketOnlyWhenItSaidItHadSomething) {
  start();
  auto* s = session();
  ASSERT_NE(s, nullptr);
  // 30 publishing turns with nothing to read: a read each would be 30 reads that find nothing (and
  // 30 polls in rabbitmq-c). Only the once-a-second sweep may read.
  auto t0 = steady::now();
  auto before = on_loop([s] { return s->reads; });
  for (std::uint64_t i = 1; i <= 30; ++i) {
    send(i, 1, delivery_mode::at_most_once);
    ASSERT_EQ(end.read_until(i, 5s).size(), i) << "publish " << i << " did not reach the broker";
  }
  auto reads = on_loop([s] { return s->reads; }) - before;
  auto seconds = std::chrono::duration_cast<std::chrono::seconds>(steady::now() - t0).count();
  EXPECT_LE(reads, std::size_t(seconds) + 1) << "publishing turns read a socket that had nothing";
}

TEST_F(EnqueuerOnAsioTest, StopPublishesWhatHostsHandedOverWhileIoRuns) {
  broker.socket_buffer = 1 << 20;  // room for all of it: stop() need not wait for the broker to read
  start();
  auto* s = session();
  ASSERT_NE(s, nullptr);
  send(1, 20, delivery_mode::at_most_once);
  enq->stop();
  EXPECT_EQ(end.read_until(20, 2s).size(), 20u) << "what a host handed over before stop() was not published";
  EXPECT_EQ(on_loop([&] { return broker.find("enqueuer"); }), nullptr) << "the connection stays open";
}

TEST_F(EnqueuerOnAsioTest, StopPublishesWhatHostsHandedOverOnceIoStopped) {
  broker.socket_buffer = 1 << 20;
  start();
  ASSERT_NE(session(), nullptr);
  stop_io();  // as dde-mqs: its io_context's threads return before the MQS stops
  send(1, 20, delivery_mode::at_most_once);
  enq->stop();  // the last turns run here
  EXPECT_EQ(end.read_until(20, 2s).size(), 20u);
  EXPECT_EQ(broker.find("enqueuer"), nullptr);
}

}  // namespace
}  // namespace dde::mqs
