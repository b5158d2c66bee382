// The registry <-> bootstrapper frames: each one encoded and decoded back to what it was, and the
// decoders' errors for frames a peer gets wrong.
#include <gtest/gtest.h>

#include <set>

#include "dde/protocol/node_frames.hpp"

namespace dde::protocol {
namespace {

/// Encodes `request` with `id`, reads it back as the node does, and returns what it decoded.
request_frame round_trip(std::uint64_t id, node_request request) {
  auto text = encode(request_frame{id, std::move(request)});
  auto decoded = parse_registry_frame(text);
  EXPECT_TRUE(decoded) << text << ": " << (decoded ? "" : decoded.error());
  if (!decoded) return {};
  auto* frame = std::get_if<request_frame>(&decoded.value());
  EXPECT_NE(frame, nullptr) << text;
  return frame ? *frame : request_frame{};
}

TEST(NodeFrames, ARegisterFrameReadsBackWithEveryField) {
  register_frame reg{std::string("266393094"), "10.0.0.2", 42042, "node-a", true};
  auto back = parse_register(ordered_json::parse(encode(reg)));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back.value().previous_id, reg.previous_id);
  EXPECT_EQ(back.value().host, "10.0.0.2");
  EXPECT_EQ(back.value().port, 42042);
  EXPECT_EQ(back.value().name, "node-a");
  EXPECT_TRUE(back.value().tls);
}

TEST(NodeFrames, ARegisterFrameOfAFreshNodeCarriesANullId) {
  register_frame reg;
  reg.port = 1;
  auto text = encode(reg);
  EXPECT_TRUE(ordered_json::parse(text)["bootstrapperId"].is_null()) << text;
  auto back = parse_register(ordered_json::parse(text));
  ASSERT_TRUE(back) << back.error();
  EXPECT_FALSE(back.value().previous_id);
  EXPECT_FALSE(back.value().tls);
}

TEST(NodeFrames, ARegisterFrameOfAnotherProtocolVersionIsRefusedNamingBoth) {
  register_frame reg;
  reg.port = 1;
  reg.protocol = 2;
  auto back = parse_register(ordered_json::parse(encode(reg)));
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error(), "protocol version 2 is not supported; this registry speaks version 1");
}

TEST(NodeFrames, EveryRequestReadsBackAsItWasSent) {
  auto deploy = round_trip(7, node::deploy{{{"isolateName", "c"}, {"args", {{"n", 1}}}}});
  EXPECT_EQ(deploy.id, 7u);
  EXPECT_EQ(std::get<node::deploy>(deploy.request).body,
            (ordered_json{{"isolateName", "c"}, {"args", {{"n", 1}}}}));

  auto pool = std::get<node::shutdown>(round_trip(8, node::shutdown{"s", std::string("c")}).request);
  EXPECT_EQ(pool.system, "s");
  EXPECT_EQ(pool.isolate, std::optional<std::string>("c"));
  EXPECT_FALSE(std::get<node::shutdown>(round_trip(8, node::shutdown{"s", {}}).request).isolate);

  EXPECT_FALSE(std::get<node::describe>(round_trip(9, node::describe{}).request).only);
  auto scoped = std::get<node::describe>(
      round_trip(9, node::describe{node::describe_scope{{"s", {"c", "d"}}, {"t", {}}}}).request);
  ASSERT_TRUE(scoped.only);
  EXPECT_EQ(*scoped.only, (node::describe_scope{{"s", {"c", "d"}}, {"t", {}}})) << "t: every pool of t";
  EXPECT_TRUE(std::holds_alternative<node::ping>(round_trip(14, node::ping{}).request));

  auto restart = std::get<node::restart>(round_trip(11, node::restart{"s", "c"}).request);
  EXPECT_EQ(restart.system + "/" + restart.isolate, "s/c");

  auto kill_one = std::get<node::kill>(round_trip(13, node::kill{"s", "c", std::string("w-1")}).request);
  EXPECT_EQ(kill_one.worker_id, std::optional<std::string>("w-1"));
  EXPECT_FALSE(std::get<node::kill>(round_trip(13, node::kill{"s", "c", {}}).request).worker_id);

  auto rate = std::get<node::set_rate>(
      round_trip(12, node::set_rate{"s", "c", {{"messages", 10}, {"perMs", 60000}}, 2}).request);
  EXPECT_EQ(rate.rate, (ordered_json{{"messages", 10}, {"perMs", 60000}}));
  EXPECT_EQ(rate.max_in_flight, 2);
  auto unchanged = std::get<node::set_rate>(
      round_trip(12, node::set_rate{"s", "c", nullptr, ordered_json(ordered_json::value_t::discarded)})
          .request);
  EXPECT_TRUE(unchanged.rate.is_null()) << "null clears the rate";
  EXPECT_TRUE(unchanged.max_in_flight.is_discarded()) << "absent leaves it as is";

  auto migrate = std::get<node::migrate>(
      round_trip(10, node::migrate{"s", "c", {"localhost", "ws://10.0.0.2:42042/activator"}}).request);
  EXPECT_EQ(migrate.workers_paths, (std::vector<std::string>{"localhost", "ws://10.0.0.2:42042/activator"}));

  ordered_json spec = {
      {"isolateSystemName", "s"}, {"isolateName", "c"}, {"uri", "/w.so"}, {"routerType", "random"}};
  EXPECT_EQ(std::get<node::redeploy>(round_trip(15, node::redeploy{spec}).request).body, spec);
}

TEST(NodeFrames, EveryRequestTypeHasItsOwnAction) {
  std::vector<node_request> all = {node::deploy{},   node::shutdown{}, node::describe{},
                                   node::ping{},     node::restart{},  node::kill{},
                                   node::set_rate{}, node::migrate{},  node::redeploy{}};
  std::set<std::string_view> actions;
  for (auto& r : all) actions.insert(action_of(r));
  EXPECT_EQ(actions.size(), all.size());
  EXPECT_EQ(action_of(node::set_rate{}), "setRate");
}

TEST(NodeFrames, ARequestWithABadFieldIsDecodedAsBadWithItsIdToAnswer) {
  auto decoded = parse_registry_frame(R"({"type":"request","id":5,"action":"kill","isolateSystemName":"s"})");
  ASSERT_TRUE(decoded);
  auto* bad = std::get_if<bad_request>(&decoded.value());
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->id, 5u);
  EXPECT_EQ(bad->error, "field \"isolateName\" must be a string");
  decoded = parse_registry_frame(R"({"type":"request","id":6,"action":"redeploy","body":"x"})");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::get<bad_request>(decoded.value()).error,
            "field \"body\" must be the deploy body, an object");

  for (auto only : {R"("only":["s"])", R"("only":{"s":"c"})", R"("only":{"s":[1]})"}) {
    decoded =
        parse_registry_frame(std::string(R"({"type":"request","id":7,"action":"describe",)") + only + "}");
    ASSERT_TRUE(decoded) << only;
    EXPECT_EQ(std::get<bad_request>(decoded.value()).error,
              "field \"only\" must map isolate system names to arrays of pool names")
        << only;
  }

  decoded = parse_registry_frame(R"({"type":"request","id":6,"action":"reboot"})");
  ASSERT_TRUE(decoded);
  EXPECT_EQ(std::get<bad_request>(decoded.value()).error, "unknown request action \"reboot\"");
}

TEST(NodeFrames, FramesThatAreNotProtocolSayWhy) {
  EXPECT_EQ(parse_registry_frame("[1]").error(), "frame is not a JSON object");
  EXPECT_EQ(parse_registry_frame("{").error(), "frame is not a JSON object");
  EXPECT_EQ(parse_registry_frame(R"({"type":"hello"})").error(), "unknown frame type \"hello\"");
  EXPECT_FALSE(parse_registry_frame(R"({"type":"registered","bootstrapperId":"12a"})"));
}

TEST(NodeFrames, RegisteredAndErrorFramesReadBack) {
  auto registered = parse_registry_frame(encode(registered_frame{"266393094"}));
  ASSERT_TRUE(registered);
  EXPECT_EQ(std::get<registered_frame>(registered.value()).bootstrapper_id, "266393094");
  auto error = parse_registry_frame(encode(error_frame{"register first"}));
  ASSERT_TRUE(error);
  EXPECT_EQ(std::get<error_frame>(error.value()).error, "register first");
}

TEST(NodeFrames, ResponsesReadBackAndAnOutOfRangeStatusBecomes500) {
  auto ok =
      parse_response(ordered_json::parse(encode(response_frame{7, true, {{"instance", "i"}}, 200, ""})));
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok.value().id, 7u);
  EXPECT_TRUE(ok.value().ok);
  EXPECT_EQ(ok.value().result, (ordered_json{{"instance", "i"}}));

  auto failed =
      parse_response(ordered_json::parse(encode(response_frame{8, false, nullptr, 404, "no pool"})));
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed.value().status, 404);
  EXPECT_EQ(failed.value().error, "no pool");

  auto odd = parse_response(ordered_json::parse(encode(response_frame{9, false, nullptr, 200, "x"})));
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd.value().status, 500);
}

TEST(NodeFrames, BootstrapperIdsAreOneTo18Digits) {
  EXPECT_TRUE(valid_bootstrapper_id("1"));
  EXPECT_TRUE(valid_bootstrapper_id(std::string(18, '9')));
  EXPECT_FALSE(valid_bootstrapper_id(""));
  EXPECT_FALSE(valid_bootstrapper_id(std::string(19, '1')));
  EXPECT_FALSE(valid_bootstrapper_id("12a"));
}

}  // namespace
}  // namespace dde::protocol
