// A pool's governance without a router: pauses announced to the replicas through a fake MQS link, a
// replica's pause and our own coming back, a new rate, and what a dead letter carries.
#include <gtest/gtest.h>

#include "dde/envelope.hpp"
#include "governance.hpp"
#include "router_fixture.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

struct Governance : ::testing::Test {
  testing::fake_link link;
  pool_spec spec = [] {
    auto s = parse_pool_spec({{"isolateSystemName", "unit"},
                              {"isolateName", "gov"},
                              {"uri", "/nowhere/libx.so"},
                              {"workersPaths", {"localhost"}},
                              {"backoff", {{"maxDelayMs", 1000}}}});
    EXPECT_TRUE(s) << s.error();
    return s.value();
  }();
  pool_figures figures{"unit.governance-test"};
  governance gov{spec, link, figures};
};

TEST_F(Governance, APauseIsAnnouncedOncePerExtensionAndAReplicasIsCappedAndNotAnnouncedAgain) {
  gov.pause(200ms, "429 from the API", true);
  ASSERT_EQ(link.pauses.size(), 1u);
  EXPECT_EQ(link.pauses[0].topic, spec.addr().topic());
  EXPECT_EQ(link.pauses[0].ms, 200ms);
  EXPECT_EQ(link.pauses[0].reason, "429 from the API");
  EXPECT_GT(gov.gate()->paused_until(), std::chrono::steady_clock::now());

  gov.pause(100ms, "another worker hit", true);
  EXPECT_EQ(link.pauses.size(), 1u) << "a pause inside the one announced is not announced";
  gov.paused_by(5000ms, "429 from the API", "mqs-1/" + link.instance());
  EXPECT_EQ(gov.describe()["remotePauses"], 0) << "our own announcement coming back changes nothing";

  gov.paused_by(60000ms, "503", "mqs-2/another-instance");
  EXPECT_EQ(link.pauses.size(), 1u) << "a replica's pause is not announced again";
  auto d = gov.describe();
  EXPECT_EQ(d["pauses"], 1);
  EXPECT_EQ(d["remotePauses"], 1);
  EXPECT_EQ(d["lastPauseReason"], "503 [from mqs-2/another-instance]");
  EXPECT_LE(d["pausedForMs"].get<long long>(), 1000) << "capped at backoff.maxDelayMs";
  EXPECT_GT(d["pausedForMs"].get<long long>(), 0);
}

TEST_F(Governance, ANewRateGoesToTheSpecDescribeShows) {
  gov.set_rate(50, 1000ms, 4);
  EXPECT_EQ(spec.rate_messages, 50u);
  EXPECT_EQ(spec.rate_per, 1000ms);
  EXPECT_EQ(spec.max_in_flight, 4u);
}

TEST_F(Governance, ADeadLetterCarriesTheWholeMessageWhyAndTheVersionThatFailedIt) {
  auto m = to_message(decode_envelope(R"({"id":"m1","from":"unit/src","body":{"n":1}})"), false);
  gov.dead_letter(m, 3, "failed 3 times", "abc123");
  ASSERT_EQ(link.enqueued.size(), 1u);
  EXPECT_EQ(link.enqueued[0].first, "dde.dead." + spec.addr().topic());
  auto e = decode_envelope(link.enqueued[0].second);
  EXPECT_EQ(e.id, "m1");
  EXPECT_EQ(e.dead_letter["reason"], "failed 3 times");
  EXPECT_EQ(e.dead_letter["attempts"], 3);
  EXPECT_EQ(e.dead_letter["pool"], spec.addr().str());
  EXPECT_EQ(e.dead_letter["md5"], "abc123");
  EXPECT_EQ(gov.describe()["deadLettered"], 1);

  auto remote = decode_envelope(gov.dead_letter_body(m, 1, "no version here", ""));
  EXPECT_FALSE(remote.dead_letter.contains("md5")) << "no version known: no md5";
}

}  // namespace
}  // namespace dde::host
