#pragma once
// The router without processes or a broker, for the router's unit tests: real worker cells running a
// real plugin (faulty) on one io_context that the test drives step by step, a fake MQS link that
// records what the router asks of it, and a manual clock. HotSwapTest adds a plugin file to replace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <filesystem>
#include <optional>

#include "dde/protocol/pool_spec.hpp"
#include "manual_clock.hpp"
#include "mqs_link.hpp"
#include "router.hpp"

namespace dde::host::testing {

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
  void enqueue_then(std::string topic, std::string props, std::string body,
                    std::function<void(bool)> settled) override {
    held.push_back({std::move(topic), std::move(props), std::move(body), std::move(settled)});
  }
  void pull(const std::string& topic, delivery_mode mode, std::size_t credit,
            std::uint32_t consumers) override {
    pulls.push_back({topic, mode, credit, consumers});
  }
  void partition(const std::string& topic, std::uint32_t count, const std::string& key) override {
    partitioned.push_back({topic, count, key});
  }
  void ack(std::uint64_t generation, std::uint64_t tag) override { acks.emplace_back(generation, tag); }
  void nack(std::uint64_t, std::uint64_t tag, bool requeue) override { nacks.emplace_back(tag, requeue); }
  void cancel(const std::string& topic) override { cancelled.push_back(topic); }
  void pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason) override {
    pauses.push_back({topic, ms, reason});
  }
  void attach(const std::string& topic, std::weak_ptr<topic_sink> s) override {
    attached = topic;
    sink = std::move(s);
  }
  void detach(const std::string&) override { sink.reset(); }
  void set_pause_handler(const std::string&, pause_handler fn) override { on_pause = std::move(fn); }
  void queue_depth(const std::string&, depth_handler fn) override {
    ++depth_asked;
    if (depth)
      fn(*depth, 0, "");
    else
      fn(0, 0, "no depth in this test");
  }
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
  /// enqueue_then's, waiting for the test to settle them (as the MQS's confirm would).
  struct held_enqueue {
    std::string topic, props, body;
    std::function<void(bool)> settled;
  };
  std::vector<held_enqueue> held;
  std::string attached;
  struct partitioning {
    std::string topic;
    std::uint32_t count;
    std::string key;
  };
  std::vector<partitioning> partitioned;
  std::weak_ptr<topic_sink> sink;
  struct pause_call {
    std::string topic;
    std::chrono::milliseconds ms;
    std::string reason;
  };
  std::vector<pause_call> pauses;
  pause_handler on_pause;
  std::optional<std::uint64_t> depth;  ///< what queue_depth answers (none: an error)
  int depth_asked = 0;

 private:
  std::string instance_ = "00000000-0000-0000-0000-000000000001";
};

class RouterTest : public ::testing::Test {
 protected:
  ~RouterTest() override { clock->clear(); }

  /// A pool of `workers` faulty workers (throwing on the seqs in `throw_on`), started.
  std::shared_ptr<router> start_pool(std::size_t workers, nlohmann::json extra = nlohmann::json::object(),
                                     std::vector<int> throw_on = {},
                                     nlohmann::json args = nlohmann::json::object()) {
    nlohmann::json body = {{"isolateSystemName", "unit"},
                           {"isolateName", "pool"},
                           {"uri", std::string(DDE_WORKER_DIR) + "/libfaulty.so"},
                           {"workersPaths", std::vector<std::string>(workers, "localhost")},
                           {"hotDeployment", false},
                           {"args", {{"throw_on", throw_on}}}};
    for (auto& [k, v] : args.items()) body["args"][k] = v;
    for (auto& [k, v] : extra.items()) body[k] = v;
    auto spec = parse_pool_spec(body);
    EXPECT_TRUE(spec) << spec.error();
    auto r = std::make_shared<router>(io, link, spec.value(), clock);
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

  /// A message from a DDE worker (with an id and a sender), or from outside DDE (`external`: no props).
  /// `published_us`: the MQS's publish stamp (0: none).
  void deliver(std::uint64_t tag, int seq, bool redelivered = false, bool external = false,
               std::uint64_t published_us = 0, int attempt = 0) {
    auto s = link->sink.lock();
    ASSERT_TRUE(s) << "the router attached itself to the link";
    // A message id, as a producer's messages have (first-reply races need one).
    mqs::message_props props;
    if (!external) {
      props.message_id = "m" + std::to_string(seq);
      props.app_id = "unit-test";
    }
    if (attempt > 0) props.headers.emplace_back("attempt", std::to_string(attempt));
    s->deliver(1, tag, redelivered, published_us, props, nlohmann::json{{"seq", seq}}.dump());
    settle();
  }
  /// The pool's clock's wall time, in µs since the epoch, moved by `offset`.
  std::uint64_t wall_us(std::chrono::microseconds offset = {}) const {
    return std::uint64_t(
        std::chrono::duration_cast<std::chrono::microseconds>((clock->wall_now() + offset).time_since_epoch())
            .count());
  }
  static metric_histogram& histogram(const std::string& name, const std::string& pool) {
    return metrics_registry::process().histogram(name, "", latency_buckets(), {{"pool", pool}});
  }

  /// Moves the pool's clock on and runs whatever came due.
  void advance(std::chrono::milliseconds d) {
    clock->advance(d);
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
  std::shared_ptr<testing::manual_clock> clock = std::make_shared<testing::manual_clock>();
};

class HotSwapTest : public RouterTest {
 protected:
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() / ("dde-hotswap-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    plugin = dir / "worker.so";
    std::filesystem::copy_file(std::string(DDE_WORKER_DIR) + "/libfaulty.so", plugin,
                               std::filesystem::copy_options::overwrite_existing);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void replace_with(const std::filesystem::path& from) {
    auto next = dir / "next.so";
    std::filesystem::copy_file(from, next, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(next, plugin);
  }
  std::filesystem::path dir, plugin;
};

}  // namespace dde::host::testing
