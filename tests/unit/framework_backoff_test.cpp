// net::backoff: the one reconnect delay of every link (host, proxy, bootstrapper, control link, the
// MQS's broker connections), and the data path's cap.
#include <gtest/gtest.h>

#include <set>

#include "dde/core/net/backoff.hpp"

namespace dde::net {
namespace {

using namespace std::chrono_literals;

TEST(Backoff, WithoutJitterDoublesFromInitialUpToMaxAndResets) {
  backoff b(100ms, 1000ms, 0.0);
  std::vector<long long> waits;
  for (int i = 0; i < 6; ++i) waits.push_back(b.next().count());
  EXPECT_EQ(waits, (std::vector<long long>{100, 200, 400, 800, 1000, 1000}));
  b.reset();
  EXPECT_EQ(b.next(), 100ms);
  EXPECT_EQ(b.peek(), 200ms);
}

TEST(Backoff, JitterOnlyShortensEachDelayByUpToItsShare) {
  for (std::uint32_t seed = 0; seed < 200; ++seed) {
    backoff b(100ms, 5000ms, 0.2, seed);
    long long base = 100;
    for (int i = 0; i < 8; ++i) {
      auto wait = b.next().count();
      ASSERT_LE(wait, base) << "seed " << seed << " step " << i;
      ASSERT_GE(wait, base - base / 5) << "seed " << seed << " step " << i;
      base = std::min<long long>(base * 2, 5000);
    }
  }
}

TEST(Backoff, ClientsThatFailedTogetherDoNotRetryTogether) {
  std::set<long long> first_waits;
  for (std::uint32_t seed = 0; seed < 50; ++seed)
    first_waits.insert(backoff(1000ms, 5000ms, 0.2, seed).next().count());
  EXPECT_GT(first_waits.size(), 25u) << "50 clients should spread over the 200 ms of jitter";
}

TEST(Backoff, TheDataPathFindsAPeerThatCameBackWithinHalfASecond) {
  // Consuming resumes within 1 s of the broker or the MQS accepting connections again
  // (`dde-bench-suite --only 8`), so the MQS's broker connections and a host's MQS link never wait
  // more than 500 ms between attempts (a 5 s cap adds 2-3.4 s of waiting to a broker restart).
  EXPECT_LE(data_path_retry_max, 500ms);
  EXPECT_LE(data_path_retry_initial, 100ms);
  for (std::uint32_t seed = 0; seed < 20; ++seed) {
    backoff b(data_path_retry_initial, data_path_retry_max, 0.2, seed);
    for (int i = 0; i < 30; ++i) ASSERT_LE(b.next(), 500ms) << "seed " << seed << " step " << i;
  }
}

TEST(Backoff, AMaxBelowInitialIsInitial) {
  backoff b(500ms, 100ms, 0.0);
  EXPECT_EQ(b.next(), 500ms);
  EXPECT_EQ(b.next(), 500ms);
}

}  // namespace
}  // namespace dde::net
