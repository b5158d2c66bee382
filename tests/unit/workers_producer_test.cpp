// The producer sample worker: `size` is the exact byte size of each payload it sends (the AMQP body
// is the body's compact JSON text), across sequence numbers of every length and with a key field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "dde_test.hpp"
#include "recording_context.hpp"

namespace dde::test {
namespace {

class Producer : public ::testing::Test, public plugin_harness {
 protected:
  Producer() : plugin_harness("producer") {}
  /// The payload sizes of what the producer sent once started with `args`.
  std::vector<std::size_t> sizes(nlohmann::json args) {
    args["to"] = "sys/consumer";
    create(std::move(args));
    w->on_start();
    std::vector<std::size_t> out;
    for (auto& s : ctx->sends) out.push_back(s.body.dump().size());
    return out;
  }
};

TEST_F(Producer, EachPayloadIsExactlyTheSizeAskedFor) {
  for (std::int64_t size : {64, 65, 256, 4096}) {
    // Sequence numbers from 1 to 3 digits, and across 9 -> 10 and 99 -> 100 digits.
    auto got = sizes({{"count", 120}, {"size", size}});
    ASSERT_EQ(got.size(), 120u);
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], std::size_t(size)) << "seq " << i;
    auto large = sizes({{"count", 20}, {"size", size}, {"start_seq", 999999990}});
    for (auto n : large) EXPECT_EQ(n, std::size_t(size));
  }
  EXPECT_EQ(ctx->sends.front().to, "sys/consumer");
  EXPECT_EQ(ctx->sends.front().body["seq"], 999999990);
}

TEST_F(Producer, AKeyFieldCountsTowardsTheSize) {
  auto got = sizes({{"count", 12}, {"size", 100}, {"key_field", "tenant"}, {"keys", {"a", "bb", 7, true}}});
  ASSERT_EQ(got.size(), 12u);
  for (auto n : got) EXPECT_EQ(n, 100u);
  EXPECT_EQ(ctx->sends[1].body["tenant"], "bb");
  EXPECT_EQ(ctx->sends[2].body["tenant"], 7);
}

TEST_F(Producer, AStampIsTheSendTimeAndCountsTowardsTheSize) {
  const auto before = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  auto got = sizes({{"count", 30}, {"size", 64}, {"stamp", true}});
  const auto after = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  ASSERT_EQ(got.size(), 30u);
  for (auto n : got) EXPECT_EQ(n, 64u);
  for (auto& sent : ctx->sends) {
    const auto stamp = sent.body.value("sent_us", std::int64_t(0));
    EXPECT_GE(stamp, before) << sent.body.dump();
    EXPECT_LE(stamp, after) << sent.body.dump();
  }
  sizes({{"count", 1}, {"size", 64}});
  EXPECT_FALSE(ctx->sends.front().body.contains("sent_us")) << "no stamp unless asked";
}

TEST_F(Producer, ASizeBelowTheShortestBodyGivesTheShortestBody) {
  auto got = sizes({{"count", 3}, {"size", 10}});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], 18u);  // {"pad":"","seq":0}
  EXPECT_EQ(ctx->sends[0].body["pad"], "");
}

TEST_F(Producer, WithAStartFileItSaysReadyAndSendsOnlyOnceTheFileExists) {
  auto dir = std::filesystem::temp_directory_path() / ("dde-producer-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto go = dir / "go";
  create({{"to", "sys/consumer"}, {"count", 5}, {"stats_dir", dir.string()}, {"start_file", go.string()}});
  w->on_start();
  EXPECT_TRUE(ctx->sends.empty());
  // Its stats file says it is ready and has sent nothing, with no start time yet.
  nlohmann::json stats;
  for (auto& f : std::filesystem::directory_iterator(dir))
    if (f.path().filename().string().rfind("producer-", 0) == 0)
      stats = nlohmann::json::parse(std::ifstream(f.path()));
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(stats.value("ready", 0), 1);
  EXPECT_EQ(stats.value("sent", -1), 0);
  EXPECT_EQ(stats.value("first_us", -1), 0);
  // Its wait is a timer that looks again: still nothing while the file is missing.
  ASSERT_GT(ctx->pending_timers(), 0u);
  ctx->fire_next();
  EXPECT_TRUE(ctx->sends.empty());
  std::ofstream{go};
  ASSERT_TRUE(ctx->run_timers_until([&] { return ctx->sends.size() == 5; }, std::chrono::seconds(5)));
  EXPECT_EQ(ctx->sends.front().body["seq"], 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dde::test
