// A pool's supervision without a router: a canary's crashes are judged by its verdict and spend no
// restart budget, a RESTART gives a fresh budget, and which pools count failures per message.
#include <gtest/gtest.h>

#include "supervision.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

pool_spec spec_with(nlohmann::json extra) {
  nlohmann::json body = {{"isolateSystemName", "unit"},
                         {"isolateName", "sup"},
                         {"uri", "/nowhere/libx.so"},
                         {"workersPaths", {"localhost"}}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  auto s = parse_pool_spec(body);
  EXPECT_TRUE(s) << s.error();
  return s.value();
}

TEST(Supervision, ACanarysCrashesRestartOrResumeItByTheStrategyAndSpendNoRestartBudget) {
  auto spec = spec_with({{"supervision", {{"strategy", "escalate"}, {"maxRestarts", 1}, {"backoffMs", 20}}}});
  supervision sup(spec);
  auto now = supervisor::time_point(1h);
  for (int i = 0; i < 5; ++i) {
    auto d = sup.on_crash(true, now);
    EXPECT_EQ(d.what, supervisor::action::restart_worker) << "a canary's crash never escalates";
    EXPECT_EQ(d.backoff, 20ms);
  }
  EXPECT_EQ(sup.verdict().recent(), 0u);
  EXPECT_EQ(sup.on_crash(false, now).what, supervisor::action::restart_pool) << "the budget is still whole";
  EXPECT_EQ(sup.on_crash(false, now).what, supervisor::action::stop_pool);

  auto resume = spec_with({{"supervision", {{"strategy", "resume"}}}});
  supervision resuming(resume);
  EXPECT_EQ(resuming.on_crash(true, now).what, supervisor::action::resume);
}

TEST(Supervision, ARestartOfTheStoppedPoolGivesAFreshBudget) {
  auto spec = spec_with({{"supervision", {{"strategy", "restart"}, {"maxRestarts", 1}}}});
  supervision sup(spec);
  auto now = supervisor::time_point(1h);
  EXPECT_EQ(sup.on_crash(false, now).what, supervisor::action::restart_worker);
  EXPECT_EQ(sup.on_crash(false, now).what, supervisor::action::stop_pool);
  EXPECT_NE(sup.verdict().stop_reason().find("1 restart"), std::string::npos) << sup.verdict().stop_reason();
  sup.reset();
  EXPECT_EQ(sup.on_crash(false, now).what, supervisor::action::restart_worker);
}

TEST(Supervision, OnlyAtLeastOncePoolsThatRequeueFailedMessagesCountThemPerMessage) {
  EXPECT_EQ(supervision(spec_with({})).poison().limit(), 3)
      << "at-least-once, back to the queue: maxFailures";
  EXPECT_FALSE(supervision(spec_with({{"deliveryMode", "at-most-once"}})).poison().enabled());
  EXPECT_FALSE(
      supervision(spec_with({{"supervision", {{"failedMessage", "dead-letter"}}}})).poison().enabled());
  EXPECT_FALSE(supervision(spec_with({{"retry", {{"delays", {100}}}}})).poison().enabled())
      << "retries count failures in the message itself";
  EXPECT_FALSE(
      supervision(spec_with({{"routerType", "scatterGather"}, {"workersPaths", {"localhost", "localhost"}}}))
          .poison()
          .enabled())
      << "raced copies are not counted";
}

}  // namespace
}  // namespace dde::host
