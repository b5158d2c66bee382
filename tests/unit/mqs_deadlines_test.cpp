// The broker loops' deadline table: what is due, and which deadline wakes the loop next.
#include <gtest/gtest.h>

#include "deadlines.hpp"

namespace dde::mqs {
namespace {

enum class work { connect, sweep, retry, count };
using table = deadlines<work>;
using namespace std::chrono_literals;

const table::time_point t0 = table::clock::time_point{} + 100s;

TEST(Deadlines, EveryKindStartsDue) {
  table d;
  EXPECT_TRUE(d.due(work::connect, t0));
  EXPECT_TRUE(d.due(work::sweep, t0));
  EXPECT_TRUE(d.due(work::retry, t0));
}

TEST(Deadlines, AKindIsDueFromItsDeadlineOn) {
  table d;
  d.set(work::sweep, t0 + 1s);
  EXPECT_FALSE(d.due(work::sweep, t0 + 999ms));
  EXPECT_TRUE(d.due(work::sweep, t0 + 1s));
  EXPECT_TRUE(d.due(work::connect, t0));  // the others keep their own
}

TEST(Deadlines, SoonerOnlyBringsADeadlineForward) {
  table d;
  d.set(work::retry, t0 + 5s);
  d.sooner(work::retry, t0 + 8s);
  EXPECT_EQ(d.at(work::retry), t0 + 5s);
  d.sooner(work::retry, t0 + 2s);
  EXPECT_EQ(d.at(work::retry), t0 + 2s);
}

TEST(Deadlines, AClearedKindIsNeverDue) {
  table d;
  d.clear(work::retry);
  EXPECT_FALSE(d.due(work::retry, t0 + 1000h));
  d.sooner(work::retry, t0 + 3s);
  EXPECT_TRUE(d.due(work::retry, t0 + 3s));
}

TEST(Deadlines, NextIsTheEarliestOfTheKindsThatCount) {
  table d;
  d.set(work::connect, t0 + 1s);
  d.set(work::sweep, t0 + 4s);
  d.set(work::retry, t0 + 2s);
  EXPECT_EQ(d.next([](work) { return true; }), t0 + 1s);
  EXPECT_EQ(d.next([](work k) { return k != work::connect; }), t0 + 2s);
  EXPECT_EQ(d.next([](work k) { return k == work::sweep; }), t0 + 4s);
  EXPECT_EQ(d.next([](work) { return false; }), table::never);
}

}  // namespace
}  // namespace dde::mqs
