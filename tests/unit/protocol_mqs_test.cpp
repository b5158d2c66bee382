// The host <-> MQS records: every request a host writes read back by the MQS's decoder, every
// record the MQS writes read back by the host's, field for field.
#include <gtest/gtest.h>

#include <algorithm>

#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/wire/fast_json.hpp"
#include "dde/wire/record.hpp"

namespace dde::mqs {
namespace {

/// The one record in `batch`, as the MQS reads it.
request read_request(const std::string& batch, std::string* body = nullptr) {
  auto decoded = wire::decode_batch(batch, 1 << 20);
  EXPECT_TRUE(decoded.error.empty()) << decoded.error;
  EXPECT_EQ(decoded.records.size(), 1u);
  if (decoded.records.size() != 1) return ack_request{};
  if (body) *body = decoded.records[0].body;
  auto parsed = parse_request(decoded.records[0].header);
  EXPECT_TRUE(parsed.req) << parsed.error << " in " << decoded.records[0].header.dump();
  return parsed.req ? *parsed.req : request(ack_request{});
}

/// The one record in `batch`, as a host reads it (read_mqs_record).
mqs_record read_record(const std::string& batch, std::string* body = nullptr) {
  auto framed = wire::split_batch(batch, 1 << 20);
  EXPECT_TRUE(framed.error.empty()) << framed.error;
  EXPECT_EQ(framed.records.size(), 1u);
  if (framed.records.size() != 1) return error_record{};
  if (body) *body = framed.records[0].body;
  auto parsed = read_mqs_record(framed.records[0].header);
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error());
  return parsed ? parsed.value() : mqs_record(error_record{});
}

/// The header of the one record in `batch`.
std::string header_of(const std::string& batch) {
  auto framed = wire::split_batch(batch, 1 << 20);
  return framed.records.size() == 1 ? std::string(framed.records[0].header) : std::string();
}

/// `header` read as JSON (what the host does with any header but a deliver's).
std::optional<deliver_record> deliver_from_json(const std::string& header) {
  auto json = wire::parse_json(header);
  if (json.is_discarded()) return std::nullopt;
  auto parsed = parse_mqs_record(json);
  if (!parsed || !std::holds_alternative<deliver_record>(parsed.value())) return std::nullopt;
  return std::get<deliver_record>(parsed.value());
}

message_props some_props() {
  message_props p;
  p.message_id = "m-1";
  p.app_id = "s.requester";
  p.content_type = "application/json";
  p.headers = {{"x-dde-from", "s/requester"}, {"x-dde-note", "caf\xc3\xa9 \"quoted\""}};
  return p;
}

TEST(MqsRequests, AHelloReadsBack) {
  std::string out;
  append(out, hello_request{2, "sampleSystem", "0b1c2d3e-aaaa-bbbb-cccc-000000000001"});
  auto h = std::get<hello_request>(read_request(out));
  EXPECT_EQ(h.protocol, 2);
  EXPECT_EQ(h.system, "sampleSystem");
  EXPECT_EQ(h.instance, "0b1c2d3e-aaaa-bbbb-cccc-000000000001");
}

TEST(MqsRequests, AnAtLeastOnceEnqueueReadsBackWithItsSeqPropsAndBody) {
  std::string out, body;
  append_enqueue(out, "s.consumer", delivery_mode::at_least_once, 41, props_json(some_props()), "payload");
  auto e = std::get<enqueue_request>(read_request(out, &body));
  EXPECT_EQ(e.topic, "s.consumer");
  EXPECT_EQ(e.mode, delivery_mode::at_least_once);
  EXPECT_EQ(e.seq, std::optional<std::uint64_t>(41));
  EXPECT_EQ(e.props, some_props());
  EXPECT_EQ(body, "payload");
}

TEST(MqsRequests, AnAtMostOnceEnqueueWithoutPropsCarriesNoSeq) {
  std::string out;
  append_enqueue(out, "s.consumer", delivery_mode::at_most_once, std::nullopt, props_json({}), "");
  auto e = std::get<enqueue_request>(read_request(out));
  EXPECT_EQ(e.mode, delivery_mode::at_most_once);
  EXPECT_FALSE(e.seq);
  EXPECT_TRUE(e.props.empty());
}

TEST(MqsRequests, APullReadsBackAndABigCreditIsSplitIntoRecordsTheMqsAccepts) {
  std::string out;
  append(out, pull_request{"s.consumer", delivery_mode::at_most_once, 64, 4, 0, {}});
  auto p = std::get<pull_request>(read_request(out));
  EXPECT_EQ(p.topic, "s.consumer");
  EXPECT_EQ(p.mode, delivery_mode::at_most_once);
  EXPECT_EQ(p.credit, 64u);
  EXPECT_EQ(p.consumers, 4u);

  std::string big;
  append(big, pull_request{"s.consumer", delivery_mode::at_least_once, max_credit * 2 + 5, 0, 0, {}});
  auto decoded = wire::decode_batch(big, 1 << 20);
  ASSERT_EQ(decoded.records.size(), 3u);
  std::uint64_t total = 0;
  for (auto& r : decoded.records) {
    auto parsed = parse_request(r.header);
    ASSERT_TRUE(parsed.req) << parsed.error;
    total += std::get<pull_request>(*parsed.req).credit;
    EXPECT_FALSE(r.header.contains("consumers")) << "0 consumers is not told";
  }
  EXPECT_EQ(total, max_credit * 2 + 5);

  std::string none;
  append(none, pull_request{"s.consumer", delivery_mode::at_least_once, 0, 0, 0, {}});
  EXPECT_TRUE(none.empty()) << "a credit of 0 is no record";
}

TEST(MqsRequests, APartitionedPullCarriesItsPartitionsAndKey) {
  std::string out;
  pull_request sent{"shop.orders", delivery_mode::at_least_once, 8, 2, 0, {}};
  sent.partitions = 16;
  sent.key = "customerId";
  append(out, sent);
  auto p = std::get<pull_request>(read_request(out));
  EXPECT_EQ(p.partitions, 16u);
  EXPECT_EQ(p.key, "customerId");
  auto refused = [](const char* header) { return parse_request(nlohmann::json::parse(header)).error; };
  EXPECT_EQ(
      refused(
          R"({"action":"pull","topic":"a.b","mode":"at-least-once","credit":1,"partitions":0,"key":"k"})"),
      "partitions 0 is out of range 1..1024");
  EXPECT_EQ(refused(R"({"action":"pull","topic":"a.b","mode":"at-least-once","credit":1,"partitions":4})"),
            "missing field \"key\"");
  EXPECT_EQ(
      refused(
          R"({"action":"pull","topic":"a.b","mode":"at-least-once","credit":1,"partitions":4,"key":"a b"})"),
      "invalid partition key \"a b\"");
  EXPECT_EQ(refused(R"({"action":"pull","topic":"a.b","mode":"at-least-once","credit":1,"key":"k"})"),
            "field \"key\" needs \"partitions\"");
}

TEST(MqsRequests, AcksAndNacksReadBackWithEveryTag) {
  std::string out;
  append(out, ack_request{{1, 2, 18446744073709551615ull}});
  EXPECT_EQ(std::get<ack_request>(read_request(out)).tags,
            (std::vector<std::uint64_t>{1, 2, 18446744073709551615ull}));
  for (bool requeue : {true, false}) {
    out.clear();
    append(out, nack_request{{7}, requeue});
    auto n = std::get<nack_request>(read_request(out));
    EXPECT_EQ(n.tags, std::vector<std::uint64_t>{7});
    EXPECT_EQ(n.requeue, requeue);
  }
}

TEST(MqsRequests, CancelDepthAndPauseReadBack) {
  std::string out;
  append(out, cancel_request{"s.consumer"});
  EXPECT_EQ(std::get<cancel_request>(read_request(out)).topic, "s.consumer");
  out.clear();
  append(out, depth_request{"s.consumer"});
  EXPECT_EQ(std::get<depth_request>(read_request(out)).topic, "s.consumer");
  out.clear();
  append(out, pause_request{"s.consumer", 1500, "429 from api.example"});
  auto p = std::get<pause_request>(read_request(out));
  EXPECT_EQ(p.topic, "s.consumer");
  EXPECT_EQ(p.ms, 1500u);
  EXPECT_EQ(p.reason, "429 from api.example");
}

TEST(MqsRequests, APauseReasonIsCutAtACharacterBoundaryToWhatTheMqsAccepts) {
  std::string reason;
  for (std::size_t i = 0; i < max_pause_reason + 10; ++i) reason += "\xc3\xa9";  // two bytes each
  std::string out;
  append(out, pause_request{"s.consumer", 10, reason});
  auto p = std::get<pause_request>(read_request(out));
  EXPECT_EQ(utf8_length(p.reason), max_pause_reason);
  EXPECT_EQ(p.reason.size(), max_pause_reason * 2);
}

TEST(MqsRequests, ATopicThatNeedsEscapingStillYieldsValidJsonAndIsRefusedByName) {
  std::string out;
  append(out, cancel_request{"bad\"topic"});
  auto decoded = wire::decode_batch(out, 1 << 20);
  ASSERT_EQ(decoded.records.size(), 1u) << decoded.error;
  auto parsed = parse_request(decoded.records[0].header);
  EXPECT_FALSE(parsed.req);
  EXPECT_NE(parsed.error.find("invalid topic"), std::string::npos) << parsed.error;
}

TEST(MqsRecords, ADeliverReadsBackWithItsPropsAndBody) {
  std::string out, body;
  append_deliver(out, "s.consumer", 99, true, "payload", some_props());
  auto d = std::get<deliver_record>(read_record(out, &body));
  EXPECT_EQ(d.topic, "s.consumer");
  EXPECT_EQ(d.tag, 99u);
  EXPECT_TRUE(d.redelivered);
  EXPECT_EQ(body, "payload");
  EXPECT_EQ(d.props, some_props());

  out.clear();
  append_deliver(out, "s.consumer", 1, false, "", {});
  auto plain = std::get<deliver_record>(read_record(out));
  EXPECT_FALSE(plain.redelivered);
  EXPECT_TRUE(plain.props.empty());
  EXPECT_EQ(plain.published_us, 0u) << "no publish stamp: none reported";
}

TEST(MqsRecords, ADeliverCarriesTheMqsPublishStampBesideItsProps) {
  auto stamped = some_props();
  stamped.published_us = 1'790'000'000'123'456;
  std::string out;
  append_deliver(out, "s.consumer", 5, false, "x", stamped);
  auto d = std::get<deliver_record>(read_record(out));
  EXPECT_EQ(d.published_us, 1'790'000'000'123'456u);
  EXPECT_EQ(d.props, some_props()) << "the stamp is not one of the props";

  message_props only_stamp;
  only_stamp.published_us = 7;
  out.clear();
  append_deliver(out, "s.consumer", 6, false, "", only_stamp);
  auto bare = std::get<deliver_record>(read_record(out));
  EXPECT_EQ(bare.published_us, 7u);
  EXPECT_TRUE(bare.props.empty());
}

/// Properties a hand reader must read as JSON does (5 cases): none, an id and a sender, and every
/// field with headers that need escaping; the last two are each test's own.
std::vector<message_props> hand_read_cases(const std::string& message_id) {
  std::vector<message_props> cases(5);
  cases[1].app_id = "s.producer";
  cases[1].message_id = message_id;
  cases[2] = cases[1];
  cases[2].content_type = "application/octet-stream";
  cases[2].headers = {{"replyTo", "s/requester"},
                      {"attempt", "3"},
                      {"deadLetter", R"({"reason":"a \"quoted\" \\ why\n\t/"})"}};
  return cases;
}

TEST(MqsRecords, AHostReadsTheDeliverHeadersAnMqsWritesWithoutAJsonTreeAndGetsWhatJsonGives) {
  auto cases = hand_read_cases("AZrT0-4e_a1b2c3d4e5f6g7h");
  cases[2].published_us = 1'790'000'000'123'456;
  cases[3].published_us = 9;  // a stamp and nothing else
  cases[4].app_id = "x";
  cases[4].headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (bool redelivered : {false, true}) {
      std::string out;
      append_deliver(out, "sys.pool", 18'446'744'073'709'551'615u - i, redelivered, "{}", cases[i]);
      auto header = header_of(out);
      auto fast = parse_deliver_header(header);
      ASSERT_TRUE(fast) << "the hand reader missed " << header;
      EXPECT_EQ(fast, deliver_from_json(header)) << header;
      auto expected = cases[i];
      expected.published_us = 0;                                    // reported as the record's own field
      std::sort(expected.headers.begin(), expected.headers.end());  // in name order, as from JSON
      EXPECT_EQ(fast->props, expected) << header;
      EXPECT_EQ(fast->published_us, cases[i].published_us);
      EXPECT_EQ(fast->redelivered, redelivered);
    }
  }
}

TEST(MqsRecords, AHeaderOfAnyOtherShapeIsLeftToTheJsonReadingWhichDecides) {
  const std::vector<std::string> others{
      R"({"topic":"s.p","action":"deliver","tag":1,"redelivered":false})",    // another order
      R"({"action":"deliver", "topic":"s.p","tag":1,"redelivered":false})",   // a space
      R"({"action":"deliver","topic":"s.p","tag":01,"redelivered":false})",   // a leading zero
      R"({"action":"deliver","topic":"s.p","tag":1.0,"redelivered":false})",  // not an integer
      R"({"action":"deliver","topic":"s.p","tag":-1,"redelivered":false})",   // signed
      R"({"action":"deliver","topic":"s.p","tag":18446744073709551616,"redelivered":false})",  // too big
      R"({"action":"deliver","topic":"s.\u0070","tag":1,"redelivered":false})",                // a \u escape
      "{\"action\":\"deliver\",\"topic\":\"s.p\xc3\xa9\",\"tag\":1,\"redelivered\":false}",    // UTF-8
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false,"props":{"appId":"a","appId":"b"}})",
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false,"props":{"headers":{"h":"1","h":"2"}}})",
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false,"props":{"other":"x"}})",
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false,"props":{"headers":{"n":1}}})",
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false}x)",
      R"({"action":"deliver","topic":"s.p","tag":1,"redelivered":false)",
      R"({"action":"deliver","topic":"s.p","tag":1})",
  };
  for (auto& h : others) {
    EXPECT_FALSE(parse_deliver_header(h)) << h;
    auto parsed = read_mqs_record(h);
    auto json = deliver_from_json(h);
    EXPECT_EQ(parsed && std::holds_alternative<deliver_record>(parsed.value()), json.has_value()) << h;
    if (json && parsed) {
      EXPECT_EQ(std::get<deliver_record>(parsed.value()), *json) << h;
    }
  }
  auto reordered = read_mqs_record(others[0]);
  ASSERT_TRUE(reordered) << "JSON in another order is still a deliver";
  EXPECT_EQ(std::get<deliver_record>(reordered.value()).topic, "s.p");
  EXPECT_EQ(std::get<deliver_record>(read_mqs_record(others[9]).value()).props.headers.size(), 1u)
      << "a repeated header: the JSON reading keeps one";
  EXPECT_FALSE(read_mqs_record("{not json")) << "a header that is not JSON is an error";
}

/// `header` read as JSON by the MQS (what it does with any header but an enqueue's as hosts write it).
parsed_request request_from_json(const std::string& header) {
  auto json = wire::parse_json(header);
  if (json.is_discarded()) return parsed_request{std::nullopt, "not JSON", std::nullopt};
  return parse_request(json);
}

TEST(MqsRequests, TheMqsReadsTheEnqueueHeadersAHostWritesWithoutAJsonTreeAndGetsWhatJsonGives) {
  auto cases = hand_read_cases("5f0c2a8e-1b7d-4c7e-9a51-3f6d2b9e8c11");
  cases[3].app_id = std::string(max_prop_string, 'a');  // at the limits
  for (std::size_t i = 0; i < max_prop_headers; ++i)
    cases[3].headers.emplace_back("h" + std::to_string(100 + i), std::string(1000, 'v'));
  cases[4].headers = {{std::string(max_prop_header_name, 'n'), ""}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (auto mode : {delivery_mode::at_least_once, delivery_mode::at_most_once, delivery_mode::reply}) {
      std::optional<std::uint64_t> seq;
      if (mode != delivery_mode::at_most_once) seq = 18'446'744'073'709'551'615u - i;
      std::string out;
      append_enqueue(out, "sys.pool.p1", mode, seq, props_json(cases[i]), "{}");
      auto header = header_of(out);
      auto fast = parse_enqueue_header(header);
      ASSERT_TRUE(fast) << "the hand reader missed " << header;
      auto slow = request_from_json(header);
      ASSERT_TRUE(slow.req) << slow.error;
      EXPECT_EQ(*fast, std::get<enqueue_request>(*slow.req)) << header;
      auto expected = cases[i];
      std::sort(expected.headers.begin(), expected.headers.end());  // in name order, as from JSON
      EXPECT_EQ(fast->props, expected) << header;
      EXPECT_EQ(fast->topic, "sys.pool.p1");
      EXPECT_EQ(fast->mode, mode);
      EXPECT_EQ(fast->seq, seq);
    }
  }
}

TEST(MqsRequests, TheHandReaderFindsAStringsEndOrEscapeAtEveryPlaceOfItsSixteenByteScan) {
  for (std::size_t n = 1; n <= 40; ++n)
    for (std::size_t at = 0; at < n; ++at)
      for (char stop : {'"', '\\', '\n', '\x7f', '\xc3'}) {
        message_props p;
        p.app_id = std::string(n, 'a');
        p.app_id[at] = stop;
        std::string out;
        append_enqueue(out, "sys.pool", delivery_mode::at_most_once, std::nullopt, props_json(p), "");
        auto header = header_of(out);
        auto fast = parse_enqueue_header(header);
        auto slow = request_from_json(header);
        if (stop == '\xc3') {  // invalid UTF-8: the JSON writer replaced it, and the reader left it to JSON
          EXPECT_FALSE(fast) << header;
          continue;
        }
        ASSERT_TRUE(fast) << header;
        ASSERT_TRUE(slow.req) << slow.error;
        EXPECT_EQ(fast->props.app_id, p.app_id) << header;
        EXPECT_EQ(*fast, std::get<enqueue_request>(*slow.req)) << header;
      }
}

TEST(MqsRequests, AnEnqueueHeaderOfAnyOtherShapeOrBeyondALimitIsLeftToTheJsonReadingWhichDecides) {
  const std::string head = R"({"action":"enqueue","topic":"s.p","mode":"at-most-once")";
  std::string many_headers = R"(,"props":{"headers":{)";
  for (int i = 0; i <= int(max_prop_headers); ++i)
    many_headers += (i ? ",\"h" : "\"h") + std::to_string(i) + "\":\"v\"";
  many_headers += "}}";
  const std::vector<std::string> others{
      R"({"topic":"s.p","action":"enqueue","mode":"at-most-once"})",             // another order
      R"({"action":"enqueue", "topic":"s.p","mode":"at-most-once"})",            // a space
      R"({"action":"enqueue","topic":"s.p","mode":"at-most-once","other":1})",   // another field
      R"({"action":"enqueue","topic":"s","mode":"at-most-once"})",               // a bad topic
      R"({"action":"enqueue","topic":"s.p","mode":"sometimes"})",                // a bad mode
      R"({"action":"enqueue","topic":"s.p","mode":"at-least-once"})",            // no seq
      R"({"action":"enqueue","topic":"s.p","mode":"at-least-once","seq":-1})",   // a signed seq
      R"({"action":"enqueue","topic":"s.p","mode":"at-least-once","seq":1.5})",  // not whole
      R"({"action":"enqueue","topic":"s.p","mode":"at-least-once","seq":18446744073709551616})",
      R"({"action":"enqueue","topic":"s.\u0070","mode":"at-most-once"})",  // a \u escape
      head + R"(,"props":{"appId":"caf)" + "\xc3\xa9" + R"("}})",          // UTF-8
      head + R"(,"props":{"appId":"a","appId":"b"}})",                     // a repeated key
      head + R"(,"props":{"headers":{"h":"1","h":"2"}}})",                 // a repeated header
      head + R"(,"props":{"headers":{"x-dde-published-us":"1"}}})",        // the MQS's own
      head + R"(,"props":{"headers":{"":"1"}}})",                          // an empty name
      head + R"(,"props":{"headers":{")" + std::string(max_prop_header_name + 1, 'n') + R"(":"1"}}})",
      head + R"(,"props":{"messageId":")" + std::string(max_prop_string + 1, 'm') + R"("}})",
      head + R"(,"props":{"headers":{"a":")" + std::string(max_prop_headers_bytes, 'v') + R"("}}})",
      head + many_headers + "}",
      head + R"(,"props":{"headers":{"n":1}}})",  // not a string
      head + R"(,"props":{"other":"x"}})",        // not a property
      head + "}x",
      head,
  };
  for (auto& h : others) {
    EXPECT_FALSE(parse_enqueue_header(h)) << h;
    auto slow = request_from_json(h);
    if (slow.req) {
      EXPECT_TRUE(std::holds_alternative<enqueue_request>(*slow.req)) << h;
    }
  }
  // The JSON reading still decides: some of these are enqueues, most are errors it names.
  EXPECT_TRUE(request_from_json(others[0]).req) << "JSON in another order is still an enqueue";
  EXPECT_TRUE(request_from_json(others[13]).req) << "the MQS's own stamp header is left out, not refused";
  EXPECT_EQ(request_from_json(others[5]).error, "an at-least-once enqueue needs a \"seq\"");
  EXPECT_EQ(request_from_json(others[16]).error, "props.messageId of 256 bytes exceeds 255");
  EXPECT_EQ(request_from_json(others[17]).error, "props.headers exceed 65536 bytes in all");
}

TEST(MqsProps, ASendersOwnPublishStampHeaderIsLeftOut) {
  message_props props;
  EXPECT_EQ(parse_props({{"headers", {{"x-dde-published-us", "1"}, {"x-dde-note", "kept"}}}}, props), "");
  EXPECT_EQ(props.headers, (std::vector<std::pair<std::string, std::string>>{{"x-dde-note", "kept"}}));
  EXPECT_EQ(props.published_us, 0u);
}

TEST(MqsRecords, ConfirmsAndRejectsReadBackWithEverySeq) {
  std::vector<std::uint64_t> seqs{3, 4, 5};
  std::string out;
  append_confirm(out, seqs);
  EXPECT_EQ(std::get<confirm_record>(read_record(out)).seqs, seqs);
  out.clear();
  append_reject(out, seqs, "queue s.consumer is full");
  auto r = std::get<reject_record>(read_record(out));
  EXPECT_EQ(r.seqs, seqs);
  EXPECT_EQ(r.error, "queue s.consumer is full");
}

TEST(MqsRecords, WelcomeDepthPauseAndErrorReadBack) {
  std::string out;
  append_welcome(out, "mqs-7");
  auto w = std::get<welcome_record>(read_record(out));
  EXPECT_EQ(w.protocol, wire::protocol_version);
  EXPECT_EQ(w.mqs, "mqs-7");

  out.clear();
  append_depth(out, "s.consumer", 120, 3, "");
  auto d = std::get<depth_record>(read_record(out));
  EXPECT_EQ(d.topic, "s.consumer");
  EXPECT_EQ(d.messages, 120u);
  EXPECT_EQ(d.consumers, 3u);
  EXPECT_EQ(d.error, "");
  out.clear();
  append_depth(out, "s.other", 0, 0, "NOT_FOUND - no queue 's.other'");
  EXPECT_EQ(std::get<depth_record>(read_record(out)).error, "NOT_FOUND - no queue 's.other'");

  out.clear();
  append_pause(out, "s.consumer", 2000, "slow down", "mqs-7/instance-1");
  auto p = std::get<pause_record>(read_record(out));
  EXPECT_EQ(p.topic, "s.consumer");
  EXPECT_EQ(p.ms, 2000u);
  EXPECT_EQ(p.reason, "slow down");
  EXPECT_EQ(p.origin, "mqs-7/instance-1");

  out.clear();
  nlohmann::json bad_header = {{"action", "pull"}, {"credit", 0}};
  append_error(out, "credit 0 is out of range 1..65535", 2, &bad_header);
  auto e = std::get<error_record>(read_record(out));
  EXPECT_EQ(e.error, "credit 0 is out of range 1..65535");
  EXPECT_EQ(e.record, std::optional<std::size_t>(2));
  EXPECT_EQ(e.header, bad_header);
}

TEST(MqsRecords, ARecordAHostCannotReadSaysWhy) {
  nlohmann::json unknown = {{"action", "teleport"}};
  EXPECT_EQ(parse_mqs_record(unknown).error(), "unknown action \"teleport\" from the MQS");
  nlohmann::json no_tag = {{"action", "deliver"}, {"topic", "s.c"}};
  EXPECT_EQ(parse_mqs_record(no_tag).error(), "bad deliver record from the MQS: no \"tag\"");
  nlohmann::json bad_seqs = {{"action", "confirm"}, {"seqs", {1, "two"}}};
  EXPECT_FALSE(parse_mqs_record(bad_seqs));
  nlohmann::json not_object = nlohmann::json::array();
  EXPECT_FALSE(parse_mqs_record(not_object));
}

}  // namespace
}  // namespace dde::mqs
