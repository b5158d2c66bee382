// The throttler worker through a recording worker_context: messages forwarded unchanged and in
// order at the rate, control messages, backpressure at maxQueued, bad arguments; and the parsing of
// control messages.
#include <gtest/gtest.h>

#include "../../workers/throttler/throttler_control.hpp"
#include "recording_context.hpp"

namespace dde::test {
namespace {

using namespace std::chrono_literals;

class ThrottlerWorker : public ::testing::Test, public plugin_harness {
 protected:
  ThrottlerWorker() : plugin_harness("throttler") {}
  std::string error_for(nlohmann::json args) {
    try {
      create(std::move(args));
      return "accepted";
    } catch (const std::exception& e) {
      // The loader says which plugin's constructor threw, then what it threw.
      std::string what = e.what();
      auto threw = what.find("threw: ");
      return threw == std::string::npos ? what : what.substr(threw + 7);
    }
  }
};

TEST_F(ThrottlerWorker, ForwardsUnchangedInOrderAtTheRate) {
  create({{"target", "sys/echo"}, {"messages", 2}, {"perMs", 50}});
  std::vector<message> sent;
  for (int i = 0; i < 6; ++i) {
    sent.push_back(make_message({{"seq", i}}, "src/requester", i % 2 ? "src/answers" : ""));
    receive(sent.back());
  }
  EXPECT_EQ(ctx->dones, 6) << "each message is done once it is queued";
  ASSERT_EQ(ctx->forwards.size(), 2u) << "the first window's two go at once";
  ASSERT_TRUE(ctx->run_timers_until([&] { return ctx->forwards.size() == 6; }, 10s));
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(ctx->forwards[i].to, "sys/echo");
    EXPECT_EQ(ctx->forwards[i].m.id(), sent[i].id());
    EXPECT_EQ(ctx->forwards[i].m.sender(), "src/requester");
    EXPECT_EQ(ctx->forwards[i].m.reply_to(), sent[i].reply_to());
    EXPECT_EQ(ctx->forwards[i].m.body()["seq"], int(i));
  }
  EXPECT_EQ(ctx->pending_timers(), 0u) << "idle: no timer left";
}

TEST_F(ThrottlerWorker, ControlMessagesChangeTheRateAndTheTargetAtOnce) {
  create({{"messages", 1}, {"perMs", 3600000}});  // no target yet
  receive(make_message({{"seq", 0}}));
  receive(make_message({{"seq", 1}}));
  EXPECT_TRUE(ctx->forwards.empty()) << "without a target, messages queue";
  EXPECT_EQ(ctx->pending_timers(), 0u);
  receive(make_message({{"dde.throttler", {{"setTarget", "sys/a"}}}}, "src/admin", "src/admin"));
  ASSERT_EQ(ctx->forwards.size(), 1u);
  EXPECT_EQ(ctx->forwards[0].to, "sys/a");
  ASSERT_EQ(ctx->replies.size(), 1u);
  EXPECT_EQ(ctx->replies[0].body["dde.throttler"]["queued"], 1);
  EXPECT_EQ(ctx->pending_timers(), 1u) << "one an hour: the second waits";
  receive(make_message(
      {{"dde.throttler", {{"setRate", {{"messages", 100}, {"perMs", 1000}}}, {"setTarget", "sys/b"}}}}));
  ASSERT_EQ(ctx->forwards.size(), 2u) << "the new rate applies to what waits";
  EXPECT_EQ(ctx->forwards[1].to, "sys/b");
  EXPECT_EQ(ctx->forwards[1].m.body()["seq"], 1);
  EXPECT_EQ(ctx->dones, 4);
  EXPECT_EQ(ctx->replies.size(), 1u) << "an unasked control message gets no answer";
}

TEST_F(ThrottlerWorker, AtMaxQueuedItHoldsDoneUntilThereIsRoom) {
  create({{"target", "sys/echo"}, {"messages", 1}, {"perMs", 40}, {"maxQueued", 2}});
  receive(make_message({{"seq", 0}}));  // forwarded at once
  receive(make_message({{"seq", 1}}));  // queued: 1
  EXPECT_EQ(ctx->dones, 2);
  receive(make_message({{"seq", 2}}));  // queued: 2, the limit
  EXPECT_EQ(ctx->dones, 2) << "the broker keeps the rest";
  ASSERT_TRUE(ctx->run_timers_until([&] { return ctx->forwards.size() == 2; }, 10s));
  EXPECT_EQ(ctx->dones, 3) << "room again: the held message is done";
}

TEST_F(ThrottlerWorker, ABadControlMessageIsAnsweredWithWhatIsWrong) {
  create({{"target", "sys/echo"}, {"messages", 5}, {"perMs", 1000}});
  receive(make_message({{"dde.throttler", {{"setRate", {{"messages", 0}, {"perMs", 10}}}}}}, "src/admin",
                       "src/admin"));
  EXPECT_EQ(ctx->dones, 1);
  ASSERT_EQ(ctx->replies.size(), 1u);
  EXPECT_EQ(ctx->replies[0].body["dde.throttler"]["error"],
            "\"dde.throttler\".setRate.messages must be in [1, 1000000000], got 0");
  EXPECT_TRUE(ctx->forwards.empty());
  ASSERT_FALSE(ctx->logs.empty());
  EXPECT_NE(ctx->logs.back().find("refused a control message from src/admin"), std::string::npos);
}

TEST_F(ThrottlerWorker, BadArgumentsRefuseTheDeploymentSayingWhich) {
  EXPECT_EQ(error_for({{"target", "s/i"}, {"messages", 5}, {"perMs", 100}}), "accepted");
  EXPECT_EQ(error_for({{"messages", 5}, {"perMs", 100}}), "accepted") << "the target may come later";
  EXPECT_EQ(error_for({{"target", "s/i"}, {"perMs", 100}}),
            "throttler: args.messages must be an integer, got null");
  EXPECT_EQ(error_for({{"target", "s/i"}, {"messages", 5}, {"perMs", 0}}),
            "throttler: args.perMs must be in [1, 86400000], got 0");
  EXPECT_EQ(error_for({{"target", "s.i"}, {"messages", 5}, {"perMs", 100}}),
            "throttler: args.target must be a pool address \"system/isolate\", got \"s.i\"");
  EXPECT_EQ(error_for({{"target", "s/i"}, {"messages", 5}, {"perMs", 100}, {"maxQueued", 0}}),
            "throttler: args.maxQueued must be in [1, 100000000], got 0");
}

TEST(ThrottlerControl, OnlyItsKeyMakesAControlMessage) {
  EXPECT_FALSE(samples::parse_control({{"seq", 1}}));
  EXPECT_FALSE(samples::parse_control("dde.throttler"));
  auto c = samples::parse_control({{"dde.throttler", {{"setRate", {{"messages", 3}, {"perMs", 250}}}}}});
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->rate);
  EXPECT_EQ(c->rate->messages, 3u);
  EXPECT_EQ(c->rate->per, 250ms);
  EXPECT_FALSE(c->target);
}

TEST(ThrottlerControl, MalformedOnesSayWhatIsWrong) {
  auto error_for = [](nlohmann::json body) {
    try {
      samples::parse_control(body);
      return std::string("accepted");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(error_for({{"dde.throttler", {{"setSpeed", 1}}}}),
            "\"dde.throttler\" has an unknown field \"setSpeed\" (setRate, setTarget)");
  EXPECT_EQ(error_for({{"dde.throttler", nlohmann::json::object()}}),
            "\"dde.throttler\" must be an object with setRate and/or setTarget, got {}");
  EXPECT_EQ(error_for({{"dde.throttler", {{"setRate", {{"messages", 2}, {"perMs", "1s"}}}}}}),
            "\"dde.throttler\".setRate.perMs must be an integer, got \"1s\"");
  EXPECT_EQ(error_for({{"dde.throttler", {{"setTarget", "a/b/c"}}}}),
            "\"dde.throttler\".setTarget must be a pool address \"system/isolate\", got \"a/b/c\"");
}

}  // namespace
}  // namespace dde::test
