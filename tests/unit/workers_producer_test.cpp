// The producer sample worker: `size` is the exact byte size of each payload it sends (the AMQP body
// is the body's compact JSON text), across sequence numbers of every length and with a key field.
#include <gtest/gtest.h>

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

TEST_F(Producer, ASizeBelowTheShortestBodyGivesTheShortestBody) {
  auto got = sizes({{"count", 3}, {"size", 10}});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], 18u);  // {"pad":"","seq":0}
  EXPECT_EQ(ctx->sends[0].body["pad"], "");
}

}  // namespace
}  // namespace dde::test
