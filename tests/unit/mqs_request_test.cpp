// Validation of what hosts send to the MQS: record batches, headers, and the records sent back.
#include "dde/protocol/mqs_request.hpp"

#include <gtest/gtest.h>

#include "batch_reader.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/wire/record.hpp"

namespace dde::mqs {
namespace {

using json = nlohmann::json;

std::string error_of(const json& header) {
  auto p = parse_request(header);
  EXPECT_FALSE(p.req.has_value()) << header.dump();
  return p.error;
}

TEST(MqsRequest, AValidEnqueueIsParsed) {
  auto p = parse_request(
      {{"action", "enqueue"}, {"topic", "sys.consumer"}, {"mode", "at-least-once"}, {"seq", 7}});
  ASSERT_TRUE(p.req);
  auto& e = std::get<enqueue_request>(*p.req);
  EXPECT_EQ(e.topic, "sys.consumer");
  EXPECT_EQ(e.mode, delivery_mode::at_least_once);
  EXPECT_EQ(e.seq, std::optional<std::uint64_t>(7));
}

TEST(MqsRequest, AnEnqueueCarriesItsPropsAndBadPropsAreNamedAndRejectedBySeq) {
  auto p = parse_request({{"action", "enqueue"},
                          {"topic", "sys.consumer"},
                          {"mode", "at-most-once"},
                          {"props",
                           {{"messageId", "m1"},
                            {"appId", "sys/producer"},
                            {"contentType", "application/octet-stream"},
                            {"headers", {{"replyTo", "sys/r"}}}}}});
  ASSERT_TRUE(p.req) << p.error;
  auto& props = std::get<enqueue_request>(*p.req).props;
  EXPECT_EQ(props.message_id, "m1");
  EXPECT_EQ(props.app_id, "sys/producer");
  EXPECT_EQ(props.content_type, "application/octet-stream");
  EXPECT_EQ(props.headers, (std::vector<std::pair<std::string, std::string>>{{"replyTo", "sys/r"}}));
  auto bad = [](json props) {
    auto r = parse_request(
        {{"action", "enqueue"}, {"topic", "a.b"}, {"mode", "at-least-once"}, {"seq", 9}, {"props", props}});
    EXPECT_FALSE(r.req);
    EXPECT_EQ(r.reject_seq, std::optional<std::uint64_t>(9));
    return r.error;
  };
  EXPECT_EQ(bad("x"), "field \"props\" must be an object");
  EXPECT_EQ(bad({{"appId", 5}}), "props.appId must be a string");
  EXPECT_EQ(bad({{"messageId", std::string(256, 'm')}}), "props.messageId of 256 bytes exceeds 255");
  EXPECT_EQ(bad({{"priority", "9"}}), "props.priority is not one of messageId, appId, contentType, headers");
  EXPECT_EQ(bad({{"headers", {{"n", 1}}}}), "props.headers.n must be a string");
  EXPECT_EQ(bad({{"headers", {{std::string(129, 'k'), "v"}}}}),
            "a props.headers name must be 1 to 128 bytes long");
  EXPECT_EQ(bad({{"headers", {{"a", std::string(40000, 'v')}, {"b", std::string(40000, 'v')}}}}),
            "props.headers exceed 65536 bytes in all");
  json many = json::object();
  for (int i = 0; i < 33; ++i) many["h" + std::to_string(i)] = "v";
  EXPECT_EQ(bad({{"headers", many}}), "props.headers has 33 entries, more than 32");
}

TEST(MqsRequest, AnAtMostOnceEnqueueNeedsNoSeq) {
  auto p = parse_request({{"action", "enqueue"}, {"topic", "a.b"}, {"mode", "at-most-once"}});
  ASSERT_TRUE(p.req);
  EXPECT_FALSE(std::get<enqueue_request>(*p.req).seq);
}

TEST(MqsRequest, AnAtLeastOnceEnqueueWithoutSeqIsRefused) {
  EXPECT_NE(error_of({{"action", "enqueue"}, {"topic", "a.b"}, {"mode", "at-least-once"}}).find("seq"),
            std::string::npos);
}

TEST(MqsRequest, TopicsThatAreNotTwoToFourNamesAreRefusedAndTheEnqueueCanBeRejectedBySeq) {
  for (std::string bad : std::vector<std::string>{"../x", "a", "a..b", "a.b.c.d.e", "a/b", "", "a.b ",
                                                  std::string(101, 'x') + ".y"}) {
    auto p = parse_request({{"action", "enqueue"}, {"topic", bad}, {"mode", "at-least-once"}, {"seq", 3}});
    EXPECT_FALSE(p.req) << bad;
    EXPECT_NE(p.error.find("invalid topic"), std::string::npos) << bad;
    EXPECT_EQ(p.reject_seq, std::optional<std::uint64_t>(3));
  }
}

TEST(MqsRequest, MissingAndMistypedFieldsAreNamed) {
  EXPECT_EQ(error_of({{"action", "enqueue"}, {"mode", "at-most-once"}}), "missing field \"topic\"");
  EXPECT_EQ(error_of({{"action", "enqueue"}, {"topic", 5}, {"mode", "at-most-once"}}),
            "field \"topic\" must be a string");
  EXPECT_NE(error_of({{"action", "enqueue"}, {"topic", "a.b"}, {"mode", "maybe"}}).find("unknown mode"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"action", "enqueue"}, {"topic", "a.b"}, {"mode", "at-least-once"}, {"seq", -1}}).find("seq"),
      std::string::npos);
  EXPECT_EQ(error_of({{"action", "ack"}, {"tags", "all"}}),
            "field \"tags\" must be an array of delivery tags");
  EXPECT_EQ(error_of({{"action", "ack"}, {"tags", {1, "2"}}}),
            "field \"tags\" must hold non-negative whole numbers");
  EXPECT_EQ(error_of({{"action", "nack"}, {"tags", {1}}}), "missing field \"requeue\"");
  EXPECT_EQ(error_of({{"action", "cancel"}}), "missing field \"topic\"");
  EXPECT_EQ(error_of({{"action", "hello"}, {"system", "s"}, {"instance", "i"}}),
            "missing field \"protocol\"");
}

TEST(MqsRequest, CreditMustBeBetweenOneAnd65535) {
  json pull{{"action", "pull"}, {"topic", "a.b"}, {"mode", "at-most-once"}};
  for (auto credit : {json(0), json(-1), json(65536), json(1.5), json("3")}) {
    pull["credit"] = credit;
    EXPECT_FALSE(parse_request(pull).req) << credit;
  }
  pull["credit"] = 65535;
  auto p = parse_request(pull);
  ASSERT_TRUE(p.req);
  EXPECT_EQ(std::get<pull_request>(*p.req).credit, 65535u);
}

TEST(MqsRequest, APullMayTellItsConsumersFromOneTo256) {
  json pull{{"action", "pull"}, {"topic", "a.b"}, {"mode", "at-most-once"}, {"credit", 8}};
  EXPECT_EQ(std::get<pull_request>(*parse_request(pull).req).consumers, 0u);  // not told
  for (auto consumers : {json(0), json(257), json(2.5), json("4")}) {
    pull["consumers"] = consumers;
    EXPECT_FALSE(parse_request(pull).req) << consumers;
  }
  pull["consumers"] = 0;
  EXPECT_EQ(error_of(pull), "consumers 0 is out of range 1..256");
  pull["consumers"] = 256;
  EXPECT_EQ(std::get<pull_request>(*parse_request(pull).req).consumers, 256u);
}

TEST(MqsRequest, UnknownActionsAreNamed) {
  EXPECT_EQ(error_of({{"action", "frobnicate"}}), "unknown action \"frobnicate\"");
}

TEST(MqsRequest, HelloCarriesProtocolSystemAndInstance) {
  auto p = parse_request(
      {{"action", "hello"}, {"protocol", 1}, {"system", "sampleSystem"}, {"instance", "3f1c-44aa"}});
  ASSERT_TRUE(p.req);
  auto& h = std::get<hello_request>(*p.req);
  EXPECT_EQ(h.protocol, 1);
  EXPECT_EQ(h.system, "sampleSystem");
  EXPECT_NE(error_of({{"action", "hello"}, {"protocol", 1}, {"system", "../etc"}, {"instance", "i"}})
                .find("invalid system name"),
            std::string::npos);
}

/// A record whose header is `header` as it is (valid JSON or not).
std::string raw(std::string_view header, std::string_view body = {}) {
  std::string out;
  dde::wire::append_raw_record(out, header, body);
  return out;
}

TEST(BatchReader, GoesOnPastABadHeaderAndAnOversizedBody) {
  std::string batch = raw(R"({"action":"a"})", "1") + raw("{nope") + raw(R"({"action":"b"})", "too long") +
                      raw("[1]") + raw(R"({"action":7})") + raw(R"({"action":"c"})", "3");
  batch_reader r(batch, 4);
  std::vector<std::string> seen;
  batch_entry e;
  while (r.next(e))
    seen.push_back(std::to_string(e.index) + ":" + (e.error.empty() ? std::string(e.body) : e.error));
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "0:1", "1:header is not valid JSON", "2:body of 8 bytes exceeds --max-message 4",
                      "3:header is not a JSON object", "4:header has no string \"action\"", "5:3"}));
}

TEST(BatchReader, ReadsAnEnqueueAsHostsWriteItWithoutJsonAndItsHeaderAsJsonWhenAsked) {
  std::string batch;
  append_enqueue(batch, "s.p", delivery_mode::at_least_once, 9, R"({"appId":"s.q"})", "body");
  append_enqueue(batch, "s.p", delivery_mode::at_least_once, 10, "", "too long");
  batch += raw(R"({"topic":"s.p","action":"enqueue","mode":"at-most-once"})", "x");
  batch_reader r(batch, 4);
  batch_entry e;
  ASSERT_TRUE(r.next(e));
  ASSERT_TRUE(e.enqueue) << "the hand reader's record";
  EXPECT_EQ(e.enqueue->seq, std::optional<std::uint64_t>(9));
  EXPECT_EQ(e.enqueue->props.app_id, "s.q");
  EXPECT_EQ(e.body, "body");
  EXPECT_EQ(e.header()["seq"], 9) << "still there as JSON for an error report";
  ASSERT_TRUE(r.next(e));
  EXPECT_FALSE(e.enqueue) << "a body over the limit is an error, read or not";
  EXPECT_EQ(e.error, "body of 8 bytes exceeds --max-message 4");
  EXPECT_EQ(enqueue_seq(e.header()), std::optional<std::uint64_t>(10));
  ASSERT_TRUE(r.next(e));
  EXPECT_FALSE(e.enqueue) << "another shape: JSON";
  EXPECT_TRUE(e.error.empty());
  EXPECT_EQ(e.header()["mode"], "at-most-once");
  EXPECT_FALSE(r.next(e));
}

TEST(BatchReader, StopsAtBrokenFraming) {
  std::string batch = raw(R"({"action":"a"})") + std::string("\x05\x00\x00\x00{\"a\"", 8);
  batch_reader r(batch, 100);
  batch_entry e;
  ASSERT_TRUE(r.next(e));
  EXPECT_TRUE(e.error.empty());
  ASSERT_TRUE(r.next(e));
  EXPECT_NE(e.error.find("truncated"), std::string::npos);
  EXPECT_FALSE(r.next(e));

  std::string huge = std::string("\xff\xff\xff\x7f", 4) + "x";
  batch_reader h(huge, 100);
  ASSERT_TRUE(h.next(e));
  EXPECT_NE(e.error.find("exceeds 65536"), std::string::npos);
  EXPECT_FALSE(h.next(e));
}

TEST(MqsRecords, HandFormattedRecordsDecodeAsJson) {
  std::string out;
  append_deliver(out, "sys.consumer", 42, true, "body");
  std::vector<std::uint64_t> seqs{1, 2, 3};
  append_confirm(out, seqs);
  append_reject(out, seqs, "bad \xff topic");  // invalid UTF-8 must not throw
  json header{{"action", "enqueue"}, {"topic", "x"}};
  append_error(out, "what", 3, &header);
  message_props props;
  props.message_id = "m\"1";
  props.app_id = "sys/p";
  props.headers = {{"to", "sys/x"}, {"bad", "\xff"}};
  append_deliver(out, "sys.consumer", 43, false, "", props);
  auto batch = wire::decode_batch(out, 1000);
  ASSERT_EQ(batch.error, "");
  ASSERT_EQ(batch.records.size(), 5u);
  EXPECT_EQ(batch.records[4].header["props"],
            (json{{"messageId", "m\"1"},
                  {"appId", "sys/p"},
                  {"headers", {{"to", "sys/x"}, {"bad", "\xef\xbf\xbd"}}}}));
  EXPECT_FALSE(batch.records[4].header["redelivered"].get<bool>());
  EXPECT_EQ(batch.records[0].header,
            (json{{"action", "deliver"}, {"topic", "sys.consumer"}, {"tag", 42}, {"redelivered", true}}));
  EXPECT_EQ(batch.records[0].body, "body");
  EXPECT_EQ(batch.records[1].header, (json{{"action", "confirm"}, {"seqs", {1, 2, 3}}}));
  EXPECT_EQ(batch.records[2].header["seqs"], (json{1, 2, 3}));
  EXPECT_EQ(batch.records[3].header["record"], 3);
  EXPECT_EQ(batch.records[3].header["header"], header);
}

TEST(MqsRequest, AValidPauseIsParsedWithOrWithoutAReason) {
  auto p = parse_request({{"action", "pause"}, {"topic", "s.c"}, {"ms", 1500}, {"reason", "429 from api"}});
  ASSERT_TRUE(p.req) << p.error;
  auto& q = std::get<pause_request>(*p.req);
  EXPECT_EQ(q.topic, "s.c");
  EXPECT_EQ(q.ms, 1500u);
  EXPECT_EQ(q.reason, "429 from api");
  p = parse_request({{"action", "pause"}, {"topic", "s.c"}, {"ms", 1}});
  ASSERT_TRUE(p.req) << p.error;
  EXPECT_EQ(std::get<pause_request>(*p.req).reason, "");
  p = parse_request({{"action", "pause"}, {"topic", "s.c"}, {"ms", 3600000}});
  ASSERT_TRUE(p.req) << p.error;
}

TEST(MqsRequest, APauseNeedsAValidTopicAndWholeMillisecondsFromOneToAnHour) {
  EXPECT_EQ(error_of({{"action", "pause"}, {"ms", 10}}), "missing field \"topic\"");
  EXPECT_NE(error_of({{"action", "pause"}, {"topic", "../x"}, {"ms", 10}}).find("invalid topic \"../x\""),
            std::string::npos);
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}}), "missing field \"ms\"");
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}, {"ms", "10"}}),
            "field \"ms\" must be a whole number of milliseconds");
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}, {"ms", 1.5}}),
            "field \"ms\" must be a whole number of milliseconds");
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}, {"ms", 0}}), "ms 0 is out of range 1..3600000");
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}, {"ms", -5}}),
            "ms -5 is out of range 1..3600000");
  EXPECT_EQ(error_of({{"action", "pause"}, {"topic", "s.c"}, {"ms", 3600001}}),
            "ms 3600001 is out of range 1..3600000");
  // As parsed from text: unsigned, and beyond int64 must not wrap around into the range.
  EXPECT_EQ(error_of(json::parse(R"({"action":"pause","topic":"s.c","ms":18446744073709551615})")),
            "ms 18446744073709551615 is out of range 1..3600000");
  EXPECT_EQ(error_of(json::parse(R"({"action":"pause","topic":"s.c","ms":0})")),
            "ms 0 is out of range 1..3600000");
}

TEST(MqsRequest, APauseReasonIsAStringOfAtMostAThousandCharacters) {
  json pause{{"action", "pause"}, {"topic", "s.c"}, {"ms", 10}};
  pause["reason"] = 429;
  EXPECT_EQ(error_of(pause), "field \"reason\" must be a string");
  pause["reason"] = std::string(1001, 'r');
  EXPECT_EQ(error_of(pause), "reason of 1001 characters exceeds 1000");
  // Characters, not bytes: 1000 two-byte characters are fine.
  std::string accents;
  for (int i = 0; i < 1000; ++i) accents += "\u00e9";
  pause["reason"] = accents;
  EXPECT_TRUE(parse_request(pause).req);
}

TEST(MqsRecords, APauseRecordCarriesTopicTimeLeftReasonAndOrigin) {
  std::string out;
  append_pause(out, "s.c", 1234, "429 \"quoted\" \xff", "mqs-1/host-2");
  auto batch = wire::decode_batch(out, 1000);
  ASSERT_EQ(batch.error, "");
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.records[0].header["action"], "pause");
  EXPECT_EQ(batch.records[0].header["topic"], "s.c");
  EXPECT_EQ(batch.records[0].header["ms"], 1234);
  EXPECT_EQ(batch.records[0].header["origin"], "mqs-1/host-2");
  EXPECT_EQ(batch.records[0].header["reason"].get<std::string>().substr(0, 12), "429 \"quoted\"");
}

TEST(MqsRequest, ADepthQuestionNamesAValidTopic) {
  auto p = parse_request({{"action", "depth"}, {"topic", "s.c"}});
  ASSERT_TRUE(p.req) << p.error;
  EXPECT_EQ(std::get<depth_request>(*p.req).topic, "s.c");
  EXPECT_EQ(error_of({{"action", "depth"}}), "missing field \"topic\"");
}

TEST(MqsRecords, ADepthAnswerCarriesMessagesConsumersAndAnErrorOnlyWhenThereIsOne) {
  std::string out;
  append_depth(out, "s.c", 50000, 2, "");
  append_depth(out, "s.d", 0, 0, "404 NOT_FOUND");
  auto batch = wire::decode_batch(out, 1000);
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].header["action"], "depth");
  EXPECT_EQ(batch.records[0].header["messages"], 50000);
  EXPECT_EQ(batch.records[0].header["consumers"], 2);
  EXPECT_FALSE(batch.records[0].header.contains("error"));
  EXPECT_EQ(batch.records[1].header["error"], "404 NOT_FOUND");
}

}  // namespace
}  // namespace dde::mqs
