// The activator <-> isolate-system /control frames: each encoded by one end and read back by the
// other, field for field, and the errors of frames an end gets wrong.
#include <gtest/gtest.h>

#include <set>

#include "dde/protocol/control_frames.hpp"

namespace dde::protocol {
namespace {

using json = nlohmann::json;

/// Encodes `request` as the activator does and reads it back as the host does.
control_request_frame round_trip(std::uint64_t id, control_request request) {
  auto text = encode(control_request_frame{id, std::move(request)});
  auto parsed = parse_control_request(text);
  EXPECT_TRUE(parsed) << text;
  if (!parsed) return {};
  auto* frame = std::get_if<control_request_frame>(&parsed.value());
  EXPECT_NE(frame, nullptr) << text;
  return frame ? *frame : control_request_frame{};
}

template <class T>
T request_of(std::uint64_t id, T request) {
  auto frame = round_trip(id, request);
  EXPECT_EQ(frame.id, id);
  return std::get<T>(frame.request);
}

TEST(ControlFrames, EveryRequestReadsBackAsTheActivatorSentIt) {
  json spec = {{"isolateName", "consumer"}, {"uri", "/x.so"}, {"credits", 16}};
  EXPECT_EQ(request_of(1, control::add_isolate{spec, std::nullopt}).spec, spec);
  EXPECT_FALSE(request_of(1, control::add_isolate{spec, std::nullopt}).link_timeout_ms) << "a redeploy waits";
  EXPECT_EQ(request_of(1, control::add_isolate{spec, 10000u}).link_timeout_ms,
            std::optional<std::uint32_t>(10000));
  EXPECT_EQ(request_of(2, control::remove_isolate{"consumer"}).isolate, "consumer");
  EXPECT_EQ(request_of(5, control::restart_isolate{"consumer"}).isolate, "consumer");
  auto one = request_of(7, control::kill_isolate{"consumer", std::string("w-3")});
  EXPECT_EQ(one.isolate, "consumer");
  EXPECT_EQ(one.worker_id, std::optional<std::string>("w-3"));
  EXPECT_FALSE(request_of(7, control::kill_isolate{"consumer", std::nullopt}).worker_id);
  auto rate = request_of(6, control::set_rate{"consumer", {{"messages", 10}, {"perMs", 1000}}, 2});
  EXPECT_EQ(rate.rate, (json{{"messages", 10}, {"perMs", 1000}}));
  EXPECT_EQ(rate.max_in_flight, 2);
  auto cleared = request_of(6, control::set_rate{"consumer", nullptr, json(json::value_t::discarded)});
  EXPECT_TRUE(cleared.rate.is_null());
  EXPECT_TRUE(cleared.max_in_flight.is_discarded());
  EXPECT_TRUE(std::get<control::describe>(round_trip(3, control::describe{}).request).isolates.empty());
  EXPECT_EQ(request_of(3, control::describe{{"a", "b"}}).isolates, (std::set<std::string>{"a", "b"}));
  EXPECT_TRUE(std::holds_alternative<control::shutdown>(round_trip(0, control::shutdown{}).request));
}

TEST(ControlFrames, EveryRequestTypeHasItsOwnAction) {
  std::vector<control_request> all = {
      control::add_isolate{}, control::remove_isolate{}, control::restart_isolate{}, control::kill_isolate{},
      control::set_rate{},    control::describe{},       control::shutdown{}};
  std::set<std::string_view> actions;
  for (auto& r : all) actions.insert(action_of(r));
  EXPECT_EQ(actions.size(), all.size());
}

TEST(ControlFrames, ARequestTheHostCannotDoIsAnsweredWithItsIdAndWhy) {
  auto empty_worker = parse_control_request(
      R"({"type":"request","id":9,"action":"killIsolate","isolateName":"c","workerId":""})");
  ASSERT_TRUE(empty_worker);
  auto bad = std::get<bad_request>(empty_worker.value());
  EXPECT_EQ(bad.id, 9u);
  EXPECT_EQ(bad.error, "field \"workerId\" must be a non-empty string (or absent: every worker)");
  auto bad_names =
      parse_control_request(R"({"type":"request","id":4,"action":"describe","isolateNames":"c"})");
  ASSERT_TRUE(bad_names);
  EXPECT_EQ(std::get<bad_request>(bad_names.value()).error,
            "field \"isolateNames\" must be an array of pool names");

  auto no_wait = parse_control_request(
      R"({"type":"request","id":3,"action":"addIsolate","spec":{},"mqsLinkTimeoutMs":0})");
  ASSERT_TRUE(no_wait);
  EXPECT_EQ(std::get<bad_request>(no_wait.value()).error,
            "field \"mqsLinkTimeoutMs\" must be an integer from 1 to 600000");

  auto unknown = parse_control_request(R"({"type":"request","id":4,"action":"explode"})");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(std::get<bad_request>(unknown.value()).error, "unknown control action \"explode\"");

  auto no_pool = parse_control_request(R"({"type":"request","id":4,"action":"removeIsolate"})");
  ASSERT_TRUE(no_pool);
  EXPECT_EQ(std::get<bad_request>(no_pool.value()).error, "field \"isolateName\" must be a non-empty string");

  EXPECT_FALSE(parse_control_request("not json"));
  EXPECT_FALSE(parse_control_request(R"({"type":"response","id":1,"ok":true})"));
}

TEST(ControlFrames, AHelloReadsBackWithEveryField) {
  auto parsed = parse_host_frame(
      encode(control_hello{"sampleSystem", "uuid-1", 4242, "ws://127.0.0.1:42043/mqs", 9100}));
  ASSERT_TRUE(parsed) << parsed.error();
  auto hello = std::get<control_hello>(parsed.value());
  EXPECT_EQ(hello.system, "sampleSystem");
  EXPECT_EQ(hello.instance, "uuid-1");
  EXPECT_EQ(hello.pid, 4242);
  EXPECT_EQ(hello.mqs, "ws://127.0.0.1:42043/mqs");
  EXPECT_EQ(hello.ops_port, 9100);

  auto no_ops = std::get<control_hello>(parse_host_frame(encode(control_hello{"s", "i", 1, "m", 0})).value());
  EXPECT_EQ(no_ops.ops_port, 0);
}

TEST(ControlFrames, AHelloOfAnotherProtocolVersionIsRefused) {
  control_hello hello{"s", "i", 1, "m", 0};
  hello.protocol = 2;
  auto parsed = parse_host_frame(encode(hello));
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error(), "a hello must carry \"protocol\": 1");
}

TEST(ControlFrames, EventsAndResponsesReadBack) {
  auto event =
      parse_host_frame(encode(control_event{{{"event", "pluginGood"}, {"isolateName", "c"}, {"md5", "ab"}}}));
  ASSERT_TRUE(event);
  auto fields = std::get<control_event>(event.value()).fields;
  EXPECT_EQ(fields["event"], "pluginGood");
  EXPECT_EQ(fields["md5"], "ab");

  auto ok = parse_host_frame(encode(control_response{3, true, {{"killed", {"w-1"}}}, 200, {}}));
  ASSERT_TRUE(ok);
  auto answer = std::get<control_response>(ok.value());
  EXPECT_EQ(answer.id, 3u);
  EXPECT_TRUE(answer.ok);
  EXPECT_EQ(answer.result, (json{{"killed", {"w-1"}}}));

  auto failed = parse_host_frame(encode(control_response{4, false, nullptr, 409, "pool c is restarting"}));
  ASSERT_TRUE(failed);
  EXPECT_EQ(std::get<control_response>(failed.value()).status, 409);
  EXPECT_EQ(std::get<control_response>(failed.value()).error, "pool c is restarting");
}

}  // namespace
}  // namespace dde::protocol
