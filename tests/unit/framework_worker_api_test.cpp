// The worker API as a plugin author sees it: typed deployment args, user structs in messages.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "dde/worker.hpp"

namespace {

struct point {
  int x = 0;
  int y = 0;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(point, x, y)

/// Records what a worker sends and replies.
class recording_context : public dde::worker_context {
 public:
  struct sent {
    nlohmann::json body;
    std::string to;
  };
  nlohmann::json args_ = nlohmann::json::object();
  std::string self_ = "shop/orders", id_ = "w1";
  std::vector<sent> sends, replies;
  int dones = 0;

  const nlohmann::json& args() const override { return args_; }
  const std::string& self() const override { return self_; }
  const std::string& worker_id() const override { return id_; }
  void send(nlohmann::json body, std::string, bool, std::string_view to, std::string_view) override {
    sends.push_back({std::move(body), std::string(to)});
  }
  void ask(nlohmann::json, std::string_view) override {}
  void reply(const dde::message& m, nlohmann::json body) override {
    replies.push_back({std::move(body), m.sender()});
  }
  void done() override { ++dones; }
  void backoff(std::chrono::milliseconds, std::string_view) override {}
  void when_writable(std::function<void()>) override {}
  void after(std::chrono::milliseconds, std::function<void()>) override {}
  void log(int, std::string_view) override {}
  void forward(const dde::message&, std::string_view) override {}
  void send_after(std::chrono::milliseconds, nlohmann::json, std::string_view) override {}
};

class typed_worker : public dde::worker {
 public:
  int count = arg<int>("count", 10);
  std::string greeting = arg("greeting", "hello");
  std::string to = required_arg<std::string>("to");

  void on_receive(const dde::message& msg) override {
    auto p = msg.as<point>();
    reply(point{p.y, p.x});
    send(p, to);
    done();
  }
  using dde::worker::arg;
  using dde::worker::required_arg;
};

/// Constructs W as the plugin entry point does: with `ctx` as its context.
template <class W>
std::unique_ptr<W> construct(recording_context& ctx) {
  dde::detail::constructing_context = &ctx;
  struct reset {
    ~reset() { dde::detail::constructing_context = nullptr; }
  } r;
  return std::make_unique<W>();
}

/// What(), or "" when `fn` does not throw T.
template <class T, class F>
std::string what_thrown(F fn) {
  try {
    fn();
  } catch (const T& e) {
    return e.what();
  }
  return {};
}

dde::message json_message(nlohmann::json body) {
  dde::message m;
  m.body_ = std::move(body);
  m.id_ = "m-42";
  m.sender_ = "shop/front";
  return m;
}

TEST(WorkerArgs, TypedArgumentsTakeTheirDefaultsWhenAbsentOrNull) {
  recording_context ctx;
  ctx.args_ = {{"to", "shop/billing"}, {"greeting", nullptr}};
  auto w = construct<typed_worker>(ctx);
  EXPECT_EQ(w->count, 10);
  EXPECT_EQ(w->greeting, "hello");
  EXPECT_EQ(w->to, "shop/billing");
}

TEST(WorkerArgs, GivenArgumentsWinOverTheDefaults) {
  recording_context ctx;
  ctx.args_ = {{"to", "shop/billing"}, {"count", 3}, {"greeting", "hi"}};
  auto w = construct<typed_worker>(ctx);
  EXPECT_EQ(w->count, 3);
  EXPECT_EQ(w->greeting, "hi");
  EXPECT_EQ(w->arg<std::vector<int>>("absent", {1, 2}), (std::vector<int>{1, 2}));
}

TEST(WorkerArgs, AMissingRequiredArgumentFailsConstructionNamingTheArgumentAndThePool) {
  recording_context ctx;
  ctx.args_ = {{"count", 3}};
  auto what = what_thrown<dde::argument_error>([&] { construct<typed_worker>(ctx); });
  EXPECT_NE(what.find("required argument \"to\" is missing"), std::string::npos) << what;
  EXPECT_NE(what.find("shop/orders"), std::string::npos) << what;
}

TEST(WorkerArgs, ArgsThatAreNotAnObjectCountAsMissing) {
  recording_context ctx;
  ctx.args_ = nullptr;
  auto what = what_thrown<std::invalid_argument>([&] { construct<typed_worker>(ctx); });
  EXPECT_NE(what.find("\"to\""), std::string::npos) << what;
}

TEST(WorkerArgs, AMistypedArgumentNamesTheArgumentThePoolAndTheValue) {
  recording_context ctx;
  ctx.args_ = {{"to", "shop/billing"}, {"count", "many"}};
  auto what = what_thrown<dde::argument_error>([&] { construct<typed_worker>(ctx); });
  EXPECT_NE(what.find("argument \"count\" has the wrong type: \"many\""), std::string::npos) << what;
  EXPECT_NE(what.find("shop/orders"), std::string::npos) << what;
  EXPECT_EQ(what.find("[json.exception"), std::string::npos) << what;

  ctx.args_ = {{"to", 7}};
  what = what_thrown<dde::argument_error>([&] { construct<typed_worker>(ctx); });
  EXPECT_NE(what.find("argument \"to\" has the wrong type: 7"), std::string::npos) << what;
}

TEST(WorkerMessages, AStructWithToJsonIsReadSentAndRepliedAsJson) {
  recording_context ctx;
  ctx.args_ = {{"to", "shop/billing"}};
  auto w = construct<typed_worker>(ctx);
  dde::worker_access::set_current(*w, json_message({{"x", 1}, {"y", 2}}));
  w->on_receive(dde::worker_access::current(*w));
  ASSERT_EQ(ctx.replies.size(), 1u);
  EXPECT_EQ(ctx.replies[0].body, (nlohmann::json{{"x", 2}, {"y", 1}}));
  ASSERT_EQ(ctx.sends.size(), 1u);
  EXPECT_EQ(ctx.sends[0].body, (nlohmann::json{{"x", 1}, {"y", 2}}));
  EXPECT_EQ(ctx.sends[0].to, "shop/billing");
  EXPECT_EQ(ctx.dones, 1);
}

TEST(WorkerMessages, ABodyThatDoesNotConvertNamesTheMessageAndTheReason) {
  auto what = what_thrown<std::invalid_argument>([] { json_message({{"x", 1}}).as<point>(); });
  EXPECT_NE(what.find("message m-42 from shop/front does not convert"), std::string::npos) << what;
  EXPECT_NE(what.find("'y' not found"), std::string::npos) << what;
  EXPECT_NE(what.find("{\"x\":1}"), std::string::npos) << what;
}

TEST(WorkerMessages, RawBytesStayBytes) {
  dde::message m;
  m.is_bytes_ = true;
  m.bytes_ = std::string("\x00\xff", 2);
  EXPECT_TRUE(m.is_bytes());
  EXPECT_EQ(m.bytes(), std::string_view("\x00\xff", 2));
  EXPECT_TRUE(m.body().is_null());
}

}  // namespace
