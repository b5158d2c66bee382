#include <gtest/gtest.h>

#include "dde/protocol/pool_spec.hpp"
#include "scale_policy.hpp"

namespace {

using dde::scale_spec;
using dde::host::scale_policy;
using namespace std::chrono_literals;

scale_spec spec_1_to_8() {
  scale_spec s;
  s.min = 1;
  s.max = 8;
  s.target_backlog = 100;
  s.cooldown = 5000ms;
  return s;
}

TEST(ScalePolicy, GrowsOnlyWhenTheBacklogStaysAboveTargetAndAtMostDoublesPerStep) {
  scale_policy p(spec_1_to_8());
  auto t = scale_policy::clock::time_point{} + 1h;
  p.changed(t);
  EXPECT_FALSE(p.sample(t, 50000, 1, 0)) << "one sample above the target may be a burst";
  auto c = p.sample(t + 1s, 50000, 1, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 2u);
  p.changed(t + 1s);
  EXPECT_FALSE(p.sample(t + 2s, 50000, 2, 0));
  c = p.sample(t + 3s, 50000, 2, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 4u);
}

TEST(ScalePolicy, NeverGoesAboveMaxNorBelowMin) {
  scale_policy p(spec_1_to_8());
  auto t = scale_policy::clock::time_point{} + 1h;
  p.changed(t);
  p.sample(t, 1000000, 6, 0);
  auto c = p.sample(t + 1s, 1000000, 6, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 8u);
  EXPECT_FALSE(p.sample(t + 2s, 1000000, 8, 0));
  EXPECT_FALSE(p.sample(t + 3s, 1000000, 8, 0)) << "at max it stays";
  c = p.sample(t + 4s, 0, 0, 0);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 1u) << "below min it grows to min at once";
  c = p.sample(t + 5s, 0, 12, 12);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 8u) << "above max it shrinks to max at once";
}

TEST(ScalePolicy, ShrinksByItsIdleWorkersOnlyAfterTheCoolDown) {
  scale_policy p(spec_1_to_8());
  auto t = scale_policy::clock::time_point{} + 1h;
  p.changed(t);
  EXPECT_FALSE(p.sample(t + 1s, 0, 8, 8));
  EXPECT_FALSE(p.sample(t + 4s, 0, 8, 8)) << "within the cool-down";
  auto c = p.sample(t + 6100ms, 0, 8, 3);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 5u) << "only the idle ones go";
  p.changed(t + 6100ms);
  EXPECT_FALSE(p.sample(t + 7s, 0, 5, 5));
  c = p.sample(t + 12s, 0, 5, 5);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->to, 1u) << "never below min";
}

TEST(ScalePolicy, ABacklogThatComesBackRestartsTheCoolDown) {
  scale_policy p(spec_1_to_8());
  auto t = scale_policy::clock::time_point{} + 1h;
  p.changed(t);
  EXPECT_FALSE(p.sample(t + 1s, 0, 4, 4));
  EXPECT_FALSE(p.sample(t + 5s, 350, 4, 0)) << "the backlog needs 4 workers";
  EXPECT_FALSE(p.sample(t + 7s, 0, 4, 4));
  EXPECT_FALSE(p.sample(t + 11s, 0, 4, 4)) << "low only since 7 s";
  EXPECT_TRUE(p.sample(t + 12100ms, 0, 4, 4));
}

TEST(ScalePolicy, TheScaleFieldIsParsedWithItsBoundsChecked) {
  auto base = nlohmann::json{{"isolateSystemName", "s"}, {"isolateName", "p"}, {"uri", "/x.so"}};
  auto with = [&](nlohmann::json scale) {
    auto b = base;
    b["scale"] = std::move(scale);
    return dde::parse_pool_spec(b);
  };
  auto ok = with({{"min", 1}, {"max", 16}, {"targetBacklogPerWorker", 100}, {"cooldownMs", 2000}});
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok.value().scale.max, 16u);
  EXPECT_EQ(ok.value().scale.cooldown, 2000ms);
  EXPECT_EQ(dde::to_json(ok.value())["scale"]["targetBacklogPerWorker"], 100);
  for (auto bad :
       {nlohmann::json{{"min", 4}, {"max", 2}}, nlohmann::json{{"min", 1}}, nlohmann::json{{"max", 0}},
        nlohmann::json{{"max", 4}, {"targetBacklogPerWorker", 0}}, nlohmann::json(3)}) {
    auto r = with(bad);
    ASSERT_FALSE(r) << bad.dump();
    EXPECT_NE(r.error().find("field \"scale\" must be"), std::string::npos) << r.error();
  }
}

}  // namespace
