// A pool's life without a router: supervision halting and reviving it, an escalated restart, and a
// shutdown that waits for its in-flight messages or for its timeout on a manual clock.
#include <gtest/gtest.h>

#include "manual_clock.hpp"
#include "pool_lifecycle.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

struct Lifecycle : ::testing::Test {
  testing::manual_time t;
  pool_lifecycle life{*t.clock, t.strand, "unit/pool"};
  std::vector<bool> drained;  ///< each call of the shutdown's callback: whether it timed out
  void shut_down(std::chrono::milliseconds timeout) {
    life.shut_down(timeout, [this](bool timed_out) { drained.push_back(timed_out); });
  }
  ~Lifecycle() override { t.clock->clear(); }
};

TEST_F(Lifecycle, AShutdownEndsOnceNothingIsInFlightAndItsTimeoutThenChangesNothing) {
  shut_down(5000ms);
  EXPECT_TRUE(life.stopping());
  life.drained_if(2);
  EXPECT_TRUE(drained.empty());
  life.drained_if(0);
  EXPECT_EQ(drained, std::vector<bool>{false});
  t.advance(5000ms);
  life.drained_if(0);
  EXPECT_EQ(drained, std::vector<bool>{false}) << "the shutdown ends once";
}

TEST_F(Lifecycle, AShutdownWhoseMessagesNeverEndEndsAtItsTimeout) {
  shut_down(1000ms);
  life.drained_if(1);
  t.advance(999ms);
  EXPECT_TRUE(drained.empty());
  t.advance(1ms);
  EXPECT_EQ(drained, std::vector<bool>{true});
  life.drained_if(0);
  EXPECT_EQ(drained, std::vector<bool>{true});
}

TEST_F(Lifecycle, AHaltedPoolSaysWhyAndHowToRestartItUntilItIsRevived) {
  EXPECT_EQ(life.state(), "running");
  ASSERT_TRUE(life.halt("stopped after: boom; RESTART starts it again", "stopped after 3 failures"));
  EXPECT_FALSE(life.halt("again", "again")) << "a stopped pool is not stopped twice";
  EXPECT_TRUE(life.stopping());
  EXPECT_TRUE(life.halted());
  EXPECT_EQ(life.state(), "stopped after: boom; RESTART starts it again");
  EXPECT_EQ(life.stopped_text("ddectl restart"),
            "pool unit/pool is stopped after 3 failures; RESTART starts it again (ddectl restart)");
  life.drained_if(0);
  EXPECT_TRUE(drained.empty()) << "a halted pool is not shutting down";

  life.revive();
  EXPECT_FALSE(life.stopping());
  EXPECT_EQ(life.state(), "running");
  shut_down(1000ms);
  EXPECT_EQ(life.stopped_text("ddectl restart"), "pool unit/pool is shutting down");
}

TEST_F(Lifecycle, AnEscalatedRestartIsTakenOnceUntilItEnds) {
  ASSERT_TRUE(life.begin_restart());
  EXPECT_FALSE(life.begin_restart());
  EXPECT_TRUE(life.restarting());
  life.end_restart();
  EXPECT_FALSE(life.restarting());
  EXPECT_TRUE(life.begin_restart());
  life.failed("worker did not answer PING");
  EXPECT_EQ(life.last_error(), "worker did not answer PING");
}

}  // namespace
}  // namespace dde::host
