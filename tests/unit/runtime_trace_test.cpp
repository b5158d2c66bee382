// How a worker carries a trace on, through a real cell running the `scripted` test
// plugin: what it sends, asks, replies or forwards while handling a traced message continues that
// trace with the hop's span as parent; with a span log, each hop is one span whose id is the parent in
// what it sent, and a message that came untraced (or with a malformed header) starts a new trace;
// without one, nothing new is traced and nothing is written, but a trace that arrives is carried on.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>

#include "dde/core/trace.hpp"
#include "dde/envelope.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/runtime/plugin_loader.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::runtime {
namespace {

constexpr const char* incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Keeps what the worker sends, apart from its "probe/events".
class sends_owner final : public cell_owner {
 public:
  void worker_done(std::size_t, std::uint64_t) override { ++done; }
  void worker_failed(std::size_t, std::uint64_t, std::string, std::string) override {}
  void worker_up(std::size_t, std::string) override {}
  void worker_crashed(std::size_t, std::uint64_t, std::string) override { ++crashed; }
  void worker_rate_limited(std::size_t, std::uint64_t, std::chrono::milliseconds, std::string,
                           message) override {}
  void enqueue(std::string, delivery_mode, const envelope& e) override {
    if (e.to != "probe/events") sent.push_back(e);
  }
  void when_writable(std::function<void()> fn) override { fn(); }
  const std::string& instance() const override { return instance_; }

  std::vector<envelope> sent;
  int done = 0, crashed = 0;

 private:
  std::string instance_ = "4f6c2b1e-0000-4000-8000-000000000007";
};

class Tracing : public ::testing::Test {
 protected:
  void TearDown() override {
    trace::set_active_log(nullptr);
    if (!log_path.empty()) std::filesystem::remove(log_path);
  }

  /// Turns the span log on, as `--trace-log` does.
  void trace_to_file() {
    log_path = std::filesystem::temp_directory_path() /
               ("dde-trace-test-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".jsonl");
    std::filesystem::remove(log_path);
    trace::set_active_log(std::make_unique<trace::span_log>(log_path.string(), "unit-node"));
  }

  std::vector<nlohmann::json> spans(const std::string& kind) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(log_path);
    for (std::string line; std::getline(in, line);)
      if (auto j = nlohmann::json::parse(line); j["kind"] == kind) out.push_back(j);
    return out;
  }

  std::shared_ptr<worker_cell> started_cell() {
    auto spec = parse_pool_spec({{"isolateSystemName", "unit"},
                                 {"isolateName", "pool"},
                                 {"uri", "/scripted.so"},
                                 {"args", nlohmann::json::object()}});
    EXPECT_TRUE(spec) << spec.error();
    auto plugin = worker_plugin::load(std::string(DDE_WORKER_DIR) + "/libtest_scripted.so");
    EXPECT_TRUE(plugin) << plugin.error();
    auto c = std::make_shared<worker_cell>(io, owner, std::make_shared<pool_spec>(spec.value()),
                                           plugin.value(), 0);
    EXPECT_TRUE(c->create());
    c->start();
    settle();
    return c;
  }

  static message msg(nlohmann::json steps, std::string traceparent, bool ask = false) {
    envelope e;
    e.id = "m1";
    e.from = "src/pool";
    e.to = "unit/pool";
    e.body = {{"tag", 1}, {"steps", std::move(steps)}};
    e.traceparent = std::move(traceparent);
    if (ask) {
      e.ask_instance = "4f6c2b1e-0000-4000-8000-000000000001";
      e.ask_worker = "w";
    }
    return to_message(std::move(e), false);
  }

  void settle() {
    for (int round = 0; round < 1000 && (io.restart(), io.poll() > 0); ++round) {
    }
  }

  boost::asio::io_context io;
  std::shared_ptr<sends_owner> owner = std::make_shared<sends_owner>();
  std::filesystem::path log_path;
};

TEST_F(Tracing, WhatAWorkerSendsWhileHandlingATracedMessageContinuesItsTrace) {
  auto c = started_cell();
  c->post_message(
      msg({{{"send", "x/y"}}, {{"ask", "x/z"}}, {{"forward", "x/w"}}, "reply", "done"}, incoming, true), 1);
  settle();
  ASSERT_EQ(owner->sent.size(), 4u);
  std::string hop_span;
  for (auto& e : owner->sent) {
    auto c = trace::parse(e.traceparent);
    ASSERT_TRUE(c) << "to " << e.to << ": \"" << e.traceparent << "\"";
    EXPECT_EQ(c->trace(), "4bf92f3577b34da6a3ce929d0e0e4736") << e.to;
    EXPECT_NE(c->span(), "00f067aa0ba902b7") << "a new span, not the sender's";
    EXPECT_TRUE(c->sampled);
    if (hop_span.empty()) hop_span = c->span();
    EXPECT_EQ(c->span(), hop_span) << "everything sent in one hop has that hop as parent";
  }
}

TEST_F(Tracing, WithoutASpanLogAnUntracedMessageStaysUntracedAndNothingIsWritten) {
  auto c = started_cell();
  c->post_message(msg({{{"send", "x/y"}}, "done"}, ""), 1);
  settle();
  ASSERT_EQ(owner->sent.size(), 1u);
  EXPECT_TRUE(owner->sent[0].traceparent.empty()) << "no header: the broker keeps the props small";
}

TEST_F(Tracing, EachHopIsASpanWhoseIdTheNextHopHasAsParent) {
  trace_to_file();
  auto c = started_cell();
  c->post_message(msg({{{"send", "x/y"}}, "done"}, incoming), 1);
  settle();
  ASSERT_EQ(owner->sent.size(), 1u);
  auto out = trace::parse(owner->sent[0].traceparent);
  ASSERT_TRUE(out);
  auto hops = spans("receive");
  ASSERT_EQ(hops.size(), 1u);
  EXPECT_EQ(hops[0]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(hops[0]["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(hops[0]["spanId"], out->span());
  EXPECT_EQ(hops[0]["name"], "unit/pool");
  EXPECT_EQ(hops[0]["messageId"], "m1");
  EXPECT_EQ(hops[0]["status"], "ok");
  EXPECT_LE(hops[0]["startUs"].get<std::int64_t>(), hops[0]["endUs"].get<std::int64_t>());
}

TEST_F(Tracing, AnUntracedOrMalformedMessageStartsANewTraceWhenThisProcessTraces) {
  trace_to_file();
  auto c = started_cell();
  c->post_message(msg({{{"send", "x/y"}}, "done"}, ""), 1);
  c->post_message(msg({{{"send", "x/y"}}, "done"}, "00-not-a-trace"), 2);
  settle();
  ASSERT_EQ(owner->sent.size(), 2u);
  auto hops = spans("receive");
  ASSERT_EQ(hops.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    auto out = trace::parse(owner->sent[i].traceparent);
    ASSERT_TRUE(out);
    EXPECT_FALSE(hops[i].contains("parentSpanId")) << "a root";
    EXPECT_EQ(hops[i]["traceId"], out->trace());
    EXPECT_EQ(hops[i]["spanId"], out->span());
  }
  EXPECT_NE(hops[0]["traceId"], hops[1]["traceId"]);
}

TEST_F(Tracing, AMessageSentOutsideAHopIsATracesRootSpan) {
  trace_to_file();
  auto c = started_cell();  // on_start sends a probe event: handling nothing
  auto roots = spans("send");
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_FALSE(roots[0].contains("parentSpanId"));
  EXPECT_EQ(roots[0]["name"], "unit/pool");
}

TEST_F(Tracing, AFailedHopIsAnErrorSpan) {
  trace_to_file();
  auto c = started_cell();
  c->post_message(msg({"throw"}, incoming), 1);
  settle();
  EXPECT_EQ(owner->crashed, 1);
  auto hops = spans("receive");
  ASSERT_EQ(hops.size(), 1u);
  EXPECT_EQ(hops[0]["status"], "error");
  EXPECT_EQ(hops[0]["error"], "on_receive threw: thrown as asked");
}

TEST_F(Tracing, AnUnsampledTraceIsCarriedOnButNotWritten) {
  trace_to_file();
  auto c = started_cell();
  c->post_message(msg({{{"send", "x/y"}}, "done"}, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
                  1);
  settle();
  ASSERT_EQ(owner->sent.size(), 1u);
  auto out = trace::parse(owner->sent[0].traceparent);
  ASSERT_TRUE(out);
  EXPECT_FALSE(out->sampled);
  EXPECT_EQ(out->trace(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_TRUE(spans("receive").empty());
}

TEST_F(Tracing, AfterDoneATimersSendIsNoLongerPartOfTheTrace) {
  trace_to_file();
  auto c = started_cell();
  c->post_message(msg({"done", {{"send", "x/y"}}}, incoming), 1);
  settle();
  ASSERT_EQ(owner->sent.size(), 1u);
  auto out = trace::parse(owner->sent[0].traceparent);
  ASSERT_TRUE(out);
  EXPECT_NE(out->trace(), "4bf92f3577b34da6a3ce929d0e0e4736") << "done() ended the hop";
}

}  // namespace
}  // namespace dde::runtime
