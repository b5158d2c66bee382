// The proxy <-> Isolate Deployer frames (remote workers): each encoded by one end and read back by
// the other, field for field, and the errors of frames an end gets wrong.
#include <gtest/gtest.h>

#include "dde/protocol/deployer_frames.hpp"

namespace dde::protocol {
namespace {

envelope sample() {
  envelope e;
  e.id = "m-1";
  e.from = "s/producer";
  e.to = "s/consumer";
  e.body = {{"seq", 7}};
  return e;
}

template <class T>
T proxy_round(const T& frame) {
  auto text = encode(proxy_frame(frame));
  auto parsed = parse_proxy_frame(text);
  EXPECT_TRUE(parsed) << text << ": " << (parsed ? "" : parsed.error());
  return parsed ? std::get<T>(parsed.value()) : T{};
}

template <class T>
T deployer_round(const T& frame) {
  auto text = encode(deployer_frame(frame));
  auto parsed = parse_deployer_frame(text);
  EXPECT_TRUE(parsed) << text << ": " << (parsed ? "" : parsed.error());
  return parsed ? std::get<T>(parsed.value()) : T{};
}

TEST(DeployerFrames, EveryProxyFrameReadsBack) {
  auto spawn = proxy_round(proxy::spawn{{{"isolateName", "c"}, {"uri", "/w.so"}}, 3, "instance-1"});
  EXPECT_EQ(spawn.spec["isolateName"], "c");
  EXPECT_EQ(spawn.index, 3u);
  EXPECT_EQ(spawn.instance, "instance-1");

  auto m = proxy_round(proxy::message{17, sample(), true});
  EXPECT_EQ(m.delivery, 17u);
  EXPECT_EQ(m.env.id, "m-1");
  EXPECT_EQ(m.env.to, "s/consumer");
  EXPECT_EQ(m.env.body, (nlohmann::json{{"seq", 7}}));
  EXPECT_TRUE(m.redelivered);

  EXPECT_EQ(proxy_round(proxy::reply{sample()}).env.from, "s/producer");

  for (auto d : {proxy::directive::resume, proxy::directive::restart, proxy::directive::stop}) {
    auto s = proxy_round(proxy::supervise{d, std::chrono::milliseconds(250)});
    EXPECT_EQ(s.what, d);
    EXPECT_EQ(s.delay.count(), 250);
  }
}

TEST(DeployerFrames, EveryDeployerFrameReadsBack) {
  EXPECT_EQ(deployer_round(deployer::spawned{"w-1"}).worker_id, "w-1");
  EXPECT_EQ(deployer_round(deployer::error{"plugin missing"}).error, "plugin missing");
  EXPECT_EQ(deployer_round(deployer::done{17}).delivery, 17u);
  auto failed = deployer_round(deployer::failed{17, "boom", "w-2"});
  EXPECT_EQ(failed.delivery, 17u);
  EXPECT_EQ(failed.error, "boom");
  EXPECT_EQ(failed.worker_id, "w-2");
  EXPECT_EQ(deployer_round(deployer::failed{0, "down", ""}).worker_id, "");
  auto limited =
      deployer_round(deployer::rate_limited{18, std::chrono::milliseconds(1500), "429", sample(), false});
  EXPECT_EQ(limited.delivery, 18u);
  EXPECT_EQ(limited.delay.count(), 1500);
  EXPECT_EQ(limited.reason, "429");
  EXPECT_EQ(limited.env.id, "m-1");
  EXPECT_EQ(deployer_round(deployer::up{"w-3"}).worker_id, "w-3");
  auto crashed = deployer_round(deployer::crashed{19, "threw"});
  EXPECT_EQ(crashed.delivery, 19u);
  EXPECT_EQ(crashed.error, "threw");
  auto enqueue = deployer_round(deployer::enqueue{"s.sink", delivery_mode::at_most_once, sample()});
  EXPECT_EQ(enqueue.topic, "s.sink");
  EXPECT_EQ(enqueue.mode, delivery_mode::at_most_once);
  EXPECT_EQ(enqueue.env.to, "s/consumer");
}

TEST(DeployerFrames, FramesAnEndGetsWrongSayWhy) {
  EXPECT_EQ(parse_proxy_frame("[]").error(), "frame is not a JSON object");
  EXPECT_EQ(parse_proxy_frame(R"({"type":"spawn","protocol":2,"spec":{}})").error(),
            "unsupported protocol version 2");
  EXPECT_EQ(parse_proxy_frame(R"({"type":"message","envelope":"{}"})").error(),
            "field \"delivery\" must be a non-negative whole number");
  EXPECT_EQ(parse_proxy_frame(R"({"type":"supervise","directive":"reboot"})").error(),
            "field \"directive\" must be resume, restart or stop");
  EXPECT_EQ(parse_deployer_frame(R"({"type":"teleport"})").error(), "unknown frame type \"teleport\"");
  EXPECT_EQ(
      parse_deployer_frame(R"({"type":"enqueue","topic":"bad topic","mode":"at-most-once","envelope":"{}"})")
          .error(),
      "invalid topic \"bad topic\"");
  EXPECT_FALSE(
      parse_deployer_frame(R"({"type":"enqueue","topic":"s.c","mode":"sometimes","envelope":"{}"})"));
}

}  // namespace
}  // namespace dde::protocol
