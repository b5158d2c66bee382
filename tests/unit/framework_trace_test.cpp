// W3C traceparent: reading, writing, carrying on. A malformed header is dropped
// where a message is read, never thrown on; the envelope carries the header through the broker's
// props, whole JSON envelopes (dead letters, remote workers) and the copy a retry publishes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dde/core/trace.hpp"
#include "dde/envelope.hpp"

namespace dde {
namespace {

constexpr const char* good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ReadsTheTraceTheSpanAndTheSampledFlag) {
  auto c = trace::parse(good);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trace(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span(), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled);
  EXPECT_FALSE(trace::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")->sampled);
  EXPECT_EQ(trace::format(*c), good);
}

TEST(Traceparent, RefusesMalformedHeadersWithoutThrowing) {
  for (const char* bad : {"", "garbage", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                          "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
                          "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"})
    EXPECT_FALSE(trace::parse(bad)) << bad;
}

TEST(Traceparent, ReadsALaterVersionByItsVersion00Prefix) {
  auto c = trace::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->span(), "00f067aa0ba902b7");
  EXPECT_FALSE(trace::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"));
}

TEST(Traceparent, AChildKeepsTheTraceAndFlagsWithANewSpan) {
  auto parent = *trace::parse(good);
  auto child = trace::child_of(parent);
  EXPECT_EQ(child.trace(), parent.trace());
  EXPECT_NE(child.span(), parent.span());
  EXPECT_EQ(child.sampled, parent.sampled);
  EXPECT_TRUE(trace::parse(trace::format(child)));
}

TEST(Traceparent, NewTracesAreValidAndDistinct) {
  auto a = trace::new_trace(), b = trace::new_trace();
  EXPECT_NE(a.trace(), b.trace());
  EXPECT_NE(a.span(), b.span());
  EXPECT_TRUE(trace::parse(trace::format(a)));
}

envelope traced(std::string traceparent) {
  envelope e;
  e.id = "id-1";
  e.from = "a/b";
  e.to = "c/d";
  e.body = {{"n", 1}};
  e.traceparent = std::move(traceparent);
  return e;
}

TEST(Traceparent, TravelsAsAnAmqpHeaderAndComesBack) {
  auto m = split_envelope(traced(good), "c.d");
  auto props = nlohmann::json::parse(m.props);
  EXPECT_EQ(props["headers"]["traceparent"], good) << m.props;
  auto back = join_envelope(props, "c.d", m.payload);
  EXPECT_EQ(back.traceparent, good);
  auto msg = to_message(std::move(back), false);
  EXPECT_EQ(msg.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
  // A retry republishes to_envelope(message): the same traceparent.
  EXPECT_EQ(to_envelope(msg).traceparent, good);
}

TEST(Traceparent, AnUntracedMessageCarriesNoHeaderAndNoTraceId) {
  auto m = split_envelope(traced(""), "c.d");
  EXPECT_EQ(m.props.find("traceparent"), std::string::npos) << m.props;
  EXPECT_TRUE(
      to_message(join_envelope(nlohmann::json::parse(m.props), "c.d", m.payload), false).trace_id().empty());
}

TEST(Traceparent, AMalformedHeaderIsDroppedWhereTheMessageIsRead) {
  auto props =
      nlohmann::json::parse(R"({"messageId":"x","appId":"a/b","headers":{"traceparent":"00-zz-1-01"}})");
  auto e = join_envelope(props, "c.d", "{}");
  EXPECT_TRUE(e.traceparent.empty());
  EXPECT_TRUE(to_message(std::move(e), false).trace_id().empty());
  auto whole = decode_envelope(R"({"id":"x","from":"a/b","to":"c/d","body":1,"traceparent":"nope"})");
  EXPECT_TRUE(whole.traceparent.empty());
}

TEST(Traceparent, AWholeEnvelopeKeepsIt) {
  auto back = decode_envelope(encode_envelope(traced(good)));
  EXPECT_EQ(back.traceparent, good);
}

TEST(SpanLog, WritesOneJsonLinePerSampledSpan) {
  auto path =
      std::filesystem::temp_directory_path() / ("dde-span-log-" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    trace::span_log log(path.string(), "node-1");
    trace::span s;
    s.ctx = trace::child_of(*trace::parse(good));
    s.parent = "00f067aa0ba902b7";
    s.pool = "sys/pool";
    s.kind = "receive";
    s.message_id = "id-1";
    s.start_us = 10;
    s.end_us = 25;
    log.write(s);
    s.error = "on_receive threw: \"boom\"";
    log.write(s);
    s.ctx.sampled = false;
    log.write(s);
  }
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  ASSERT_EQ(lines.size(), 2u) << "the unsampled span is not written";
  auto& ok = lines[0];
  EXPECT_EQ(ok["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(ok["parentSpanId"], "00f067aa0ba902b7");
  EXPECT_EQ(ok["spanId"].get<std::string>().size(), 16u);
  EXPECT_EQ(ok["name"], "sys/pool");
  EXPECT_EQ(ok["system"], "sys");
  EXPECT_EQ(ok["pool"], "pool");
  EXPECT_EQ(ok["node"], "node-1");
  EXPECT_EQ(ok["kind"], "receive");
  EXPECT_EQ(ok["messageId"], "id-1");
  EXPECT_EQ(ok["startUs"], 10);
  EXPECT_EQ(ok["endUs"], 25);
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(lines[1]["status"], "error");
  EXPECT_EQ(lines[1]["error"], "on_receive threw: \"boom\"");
}

TEST(SpanLog, RefusesAPathItCannotOpen) {
  EXPECT_THROW(trace::span_log("/nonexistent-dir/x/spans.jsonl", "n"), std::runtime_error);
}

}  // namespace
}  // namespace dde
