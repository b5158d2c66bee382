// dde-mqs against a real RabbitMQ: bad input, and a host that does not read its socket.
#include <gtest/gtest.h>

#include <fstream>

#include "dde/wire/record.hpp"
#include "mqs_rmq_support.hpp"
#include "tcp_proxy.hpp"

namespace dde::mqs::test {
namespace {

/// A record whose header is `header` as it is (valid JSON or not).
std::string raw_record(std::string_view header, std::string_view body = {}) {
  std::string out;
  dde::wire::append_raw_record(out, header, body);
  return out;
}

bool has_error(mqs_client& c, const std::string& text) {
  for (auto& r : c.records("error"))
    if (r.header.value("error", "").find(text) != std::string::npos) return true;
  return false;
}

TEST(MqsBroker, BadInputGetsErrorRecordsWhileAnotherHostGoesOnUndisturbed) {
  auto& broker = shared_broker();
  mqs_process mqs(broker, {"--max-message", "1024", "--max-frame", "131072"});
  auto topic = unique_topic("good");
  auto bad_topic = unique_topic("bad");

  mqs_client good(mqs.port());
  ASSERT_TRUE(good.hello("good"));
  auto_ack(good);
  good.pull(topic, "at-least-once", 2000);
  std::atomic<bool> done{false};
  std::atomic<int> sent{0};
  std::thread producer([&] {
    while (!done && sent < 2000) {
      int i = ++sent;
      good.enqueue(topic, "at-least-once", i, "good " + std::to_string(i));
      if (i % 100 == 0)
        good.wait_for([&] { return good.confirmed_seqs().size() + 200 >= std::size_t(i); }, 10s);
    }
  });

  mqs_client bad(mqs.port());
  bad.enqueue(bad_topic, "at-least-once", 1, "too early");  // before hello
  ASSERT_TRUE(bad.wait_for([&] { return has_error(bad, "first record must be a hello"); }, 10s));
  EXPECT_EQ(bad.rejected_seqs(), std::vector<std::uint64_t>{1});
  ASSERT_TRUE(bad.hello("bad"));

  std::string batch =
      raw_record("{not json") + raw_record(R"({"action":"frobnicate"})") +
      raw_record(R"({"action":"enqueue","topic":"../x","mode":"at-least-once","seq":2})", "x") +
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once","seq":3})",
                 std::string(2000, 'b')) +
      raw_record(R"({"action":"pull","topic":")" + bad_topic + R"(","mode":"at-least-once","credit":0})") +
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once"})", "x") +
      raw_record(R"({"action":"ack","tags":"all"})") +
      // A good record after the bad ones is still served.
      raw_record(R"({"action":"enqueue","topic":")" + bad_topic + R"(","mode":"at-least-once","seq":4})",
                 "fine");
  bad.send(batch);
  ASSERT_TRUE(bad.wait_for([&] { return bad.count("error") >= 1 + 7; }, 10s));
  EXPECT_TRUE(has_error(bad, "not valid JSON"));
  EXPECT_TRUE(has_error(bad, "unknown action \"frobnicate\""));
  EXPECT_TRUE(has_error(bad, "invalid topic \"../x\""));
  EXPECT_TRUE(has_error(bad, "exceeds --max-message"));
  EXPECT_TRUE(has_error(bad, "credit 0 is out of range"));
  EXPECT_TRUE(has_error(bad, "needs a \"seq\""));
  EXPECT_TRUE(has_error(bad, "\"tags\" must be an array"));
  for (auto& e : bad.records("error")) EXPECT_TRUE(e.header.contains("record")) << e.header.dump();
  ASSERT_TRUE(bad.wait_for([&] { return bad.confirmed_seqs() == std::vector<std::uint64_t>{4}; }, 10s));
  auto rejected = bad.rejected_seqs();
  EXPECT_EQ(std::set<std::uint64_t>(rejected.begin(), rejected.end()), (std::set<std::uint64_t>{1, 2, 3}));

  bad.send(std::string("\x01\x00", 2));  // truncated batch
  ASSERT_TRUE(bad.wait_for([&] { return has_error(bad, "truncated record"); }, 10s));
  bad.send_text("hello?");
  ASSERT_TRUE(bad.wait_for([&] { return !bad.texts().empty(); }, 10s));
  EXPECT_NE(bad.texts().at(0).find("\"action\":\"error\""), std::string::npos);
  EXPECT_FALSE(bad.closed());

  // Over --max-frame: that connection, and only that one, is closed with 1009, and the host reads
  // why even while it is still writing: the MQS drains the rest of the message in the close
  // handshake rather than resetting the connection (64 times the limit: a reset would be certain).
  bad.send(std::string(64 * 131072, 'z'));
  ASSERT_TRUE(bad.wait_for([&] { return bad.closed(); }, 10s));
  EXPECT_EQ(bad.close_code(), 1009);

  done = true;
  producer.join();
  int n = sent;
  ASSERT_TRUE(good.wait_for([&] { return good.confirmed_seqs().size() >= std::size_t(n); }, 30s))
      << mqs.log();
  ASSERT_TRUE(good.wait_for([&] { return good.count("deliver") >= std::size_t(n); }, 30s)) << mqs.log();
  EXPECT_EQ(bodies_of(good.records("deliver")).size(), std::size_t(n));
  EXPECT_TRUE(good.records("error").empty());
  EXPECT_FALSE(good.closed());

  mqs_client late(mqs.port());  // the MQS still takes new hosts
  EXPECT_TRUE(late.hello("late"));
  good.close();
  mqs.stop();
  for (auto& q : {topic, bad_topic}) {
    delete_topic(broker, q);
  }
}

std::size_t rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  std::size_t kib = 0;
  while (in >> key)
    if (key == "VmRSS:" && in >> kib) break;
  return kib;
}

TEST(MqsBroker, AHostThatDoesNotReadItsSocketGetsNoMoreThanAFrameQueuedAndTheRestWaitsInTheBroker) {
  auto& broker = shared_broker();
  // At-most-once is acked to the broker as it is handed over: without backpressure the MQS would
  // take the whole queue into the stalled host's send queue.
  mqs_process mqs(broker, {"--prefetch", "100", "--max-frame", "1048576", "--max-message", "524288"});
  auto topic = unique_topic("stalled");
  constexpr int n = 20000;
  const std::string body(2048, 'x');
  {
    mqs_client producer(mqs.port());
    ASSERT_TRUE(producer.hello("producer"));
    for (int i = 0; i < n; ++i) producer.enqueue(topic, "at-most-once", std::nullopt, body);
    ASSERT_TRUE(wait_until([&] { return broker.queue_depth(topic) == std::optional<std::uint32_t>(n); }, 60s))
        << mqs.log();
    producer.close();
  }
  auto before = rss_kib(mqs.pid());
  dde::test::tcp_proxy proxy(mqs.port());
  mqs_client reader(proxy.port());
  ASSERT_TRUE(reader.hello("reader"));
  proxy.stall(true);
  reader.pull(topic, "at-most-once", 65535);
  // The broker's queue shrinks by what fits in socket buffers and one frame, then stops.
  std::uint32_t last = n + 1;
  ASSERT_TRUE(wait_until(
      [&] {
        auto depth = broker.queue_depth(topic).value_or(0);
        bool settled = depth == last;
        last = depth;
        return settled;
      },
      60s, 1000ms));
  EXPECT_GT(last, std::uint32_t(n / 2)) << "the MQS took what the broker should hold";
  EXPECT_LT(rss_kib(mqs.pid()), before + 16 * 1024) << "KiB before: " << before;
  proxy.stall(false);
  ASSERT_TRUE(reader.wait_for([&] { return reader.count("deliver") >= std::size_t(n); }, 120s)) << mqs.log();
  EXPECT_EQ(reader.count("deliver"), std::size_t(n));
  reader.close();
  broker.delete_queue(topic);
}

}  // namespace
}  // namespace dde::mqs::test
