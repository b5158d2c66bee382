#include <gtest/gtest.h>

#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "dde/wire/record.hpp"

namespace {

TEST(Names, AcceptLettersDigitsUnderscoreAndDash) {
  EXPECT_TRUE(dde::valid_name("sampleSystem"));
  EXPECT_TRUE(dde::valid_name("a_b-C9"));
  EXPECT_FALSE(dde::valid_name(""));
  EXPECT_FALSE(dde::valid_name("a.b"));
  EXPECT_FALSE(dde::valid_name("../x"));
  EXPECT_FALSE(dde::valid_name("a b"));
  EXPECT_FALSE(dde::valid_name(std::string(101, 'a')));
}

TEST(Names, AddressesAreSystemSlashIsolateAndMapToTopics) {
  auto a = dde::parse_address("sampleSystem/consumer");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->topic(), "sampleSystem.consumer");
  EXPECT_EQ(a->str(), "sampleSystem/consumer");
  EXPECT_FALSE(dde::parse_address("nosep"));
  EXPECT_FALSE(dde::parse_address("a/b/c"));
  EXPECT_FALSE(dde::parse_address("/b"));
}

TEST(Names, TopicsHaveTwoToFourValidParts) {
  EXPECT_TRUE(dde::valid_topic("sys.pool"));
  EXPECT_TRUE(dde::valid_topic(dde::reply_topic(dde::new_uuid())));
  EXPECT_TRUE(dde::valid_topic(dde::dead_letter_topic("sys.pool")));
  EXPECT_FALSE(dde::valid_topic("../x"));
  EXPECT_FALSE(dde::valid_topic("single"));
  EXPECT_FALSE(dde::valid_topic("a..b"));
  EXPECT_FALSE(dde::valid_topic("a.b.c.d.e"));
}

TEST(WsUrls, AListOfAlternativesParsesInOrderAndOneBadElementSpoilsIt) {
  auto urls = dde::net::parse_ws_url_list("ws://a:1/mqs,ws://b:2/mqs");
  ASSERT_EQ(urls.size(), 2u);
  EXPECT_EQ(urls[0].host, "a");
  EXPECT_EQ(urls[1].port, 2);
  EXPECT_EQ(dde::net::parse_ws_url_list("ws://a:1/mqs").size(), 1u);
  EXPECT_TRUE(dde::net::parse_ws_url_list("").empty());
  EXPECT_TRUE(dde::net::parse_ws_url_list("ws://a:1/mqs,").empty());
  EXPECT_TRUE(dde::net::parse_ws_url_list("ws://a:1/mqs,http://b/").empty());
}

TEST(RecordCodec, ConcatenatedBatchesDecodeAsOne) {
  std::string a, b;
  dde::wire::append_record(a, {{"action", "enqueue"}, {"topic", "s.c"}}, "body-1");
  dde::wire::append_raw_record(b, R"({"action":"ack","tags":[1,2]})");
  auto batch = dde::wire::decode_batch(a + b, 1024);
  ASSERT_EQ(batch.error, "");
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_EQ(batch.records[0].header["topic"], "s.c");
  EXPECT_EQ(batch.records[0].body, "body-1");
  EXPECT_EQ(batch.records[1].header["tags"].size(), 2u);
  EXPECT_EQ(batch.records[1].body, "");
}

TEST(RecordCodec, NamesTheFirstBadRecordAndKeepsTheOnesBefore) {
  std::string data;
  dde::wire::append_record(data, {{"action", "ack"}, {"tags", {1}}});
  dde::wire::append_raw_record(data, "{not json");
  auto batch = dde::wire::decode_batch(data, 1024);
  EXPECT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.bad_index, 1u);
  EXPECT_NE(batch.error.find("not valid JSON"), std::string::npos);
}

TEST(RecordCodec, RejectsHeadersWithoutActionOversizedBodiesAndTruncation) {
  std::string no_action;
  dde::wire::append_record(no_action, {{"topic", "a.b"}});
  EXPECT_NE(dde::wire::decode_batch(no_action, 10).error.find("action"), std::string::npos);

  std::string big;
  dde::wire::append_record(big, {{"action", "enqueue"}}, std::string(11, 'x'));
  EXPECT_NE(dde::wire::decode_batch(big, 10).error.find("exceeds the limit of 10"), std::string::npos);

  std::string whole;
  dde::wire::append_record(whole, {{"action", "enqueue"}}, "abc");
  auto cut = dde::wire::decode_batch(std::string_view(whole).substr(0, whole.size() - 1), 10);
  EXPECT_NE(cut.error.find("truncated"), std::string::npos);
  EXPECT_TRUE(cut.records.empty());

  auto array = std::string("\x02\x00\x00\x00[]\x00\x00\x00\x00", 10);
  EXPECT_NE(dde::wire::decode_batch(array, 10).error.find("not a JSON object"), std::string::npos);
}

TEST(Base64, RoundTripsEveryLengthAndRejectsGarbage) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += char(i);
  for (std::size_t n = 0; n < 40; ++n) {
    std::string in = all.substr(n * 3 % 200, n), out;
    ASSERT_TRUE(dde::base64_decode(dde::base64_encode(in), out)) << n;
    EXPECT_EQ(out, in) << n;
  }
  std::string out;
  EXPECT_FALSE(dde::base64_decode("abc", out));
  EXPECT_FALSE(dde::base64_decode("a*cd", out));
  EXPECT_FALSE(dde::base64_decode("a=cd", out));
}

TEST(Envelope, RoundTripsJsonBodiesAndAskFields) {
  dde::envelope e;
  e.id = dde::new_uuid();
  e.from = "s/requester";
  e.to = "s/supplier";
  e.ask_instance = "inst";
  e.ask_worker = "w1";
  e.body = {{"n", 3}, {"text", "hi \"there\""}};
  auto back = dde::decode_envelope(dde::encode_envelope(e));
  EXPECT_EQ(back.id, e.id);
  EXPECT_EQ(back.from, "s/requester");
  EXPECT_EQ(back.to, "s/supplier");
  EXPECT_EQ(back.ask_instance, "inst");
  EXPECT_EQ(back.ask_worker, "w1");
  EXPECT_EQ(back.body, e.body);
  auto m = dde::to_message(back, true);
  EXPECT_TRUE(m.is_ask());
  EXPECT_TRUE(m.redelivered());
  EXPECT_FALSE(m.is_reply());
}

// Found by envelope_fuzz: an ask without an instance kept its worker, which a re-encode then lost.
TEST(Envelope, AnAskWithoutAnInstanceIsNoAskAndSurvivesAReEncode) {
  auto first = dde::decode_envelope(R"({"id":"m","from":"a/b","to":"c/d","body":1,"ask":{"worker":"w"}})");
  EXPECT_EQ(first.ask_instance, "");
  EXPECT_EQ(first.ask_worker, "");
  EXPECT_FALSE(dde::to_message(first, false).is_ask());
  auto again = dde::decode_envelope(dde::encode_envelope(first));
  EXPECT_EQ(again.ask_worker, first.ask_worker);
  EXPECT_EQ(dde::encode_envelope(again), dde::encode_envelope(first));
}

TEST(Envelope, CarriesRawBytesAndReadsForeignPayloadsAsExternal) {
  dde::envelope e;
  e.id = "1";
  e.from = "s/p";
  e.to = "s/c";
  e.is_bytes = true;
  e.bytes = std::string("\x00\xff\x10zz", 5);
  auto back = dde::decode_envelope(dde::encode_envelope(e));
  EXPECT_TRUE(back.is_bytes);
  EXPECT_EQ(back.bytes, e.bytes);

  auto plain = dde::decode_envelope(R"({"hello": 1})");
  EXPECT_EQ(plain.from, "external");
  EXPECT_EQ(plain.body["hello"], 1);
  auto text = dde::decode_envelope("not json at all");
  EXPECT_TRUE(text.is_bytes);
  EXPECT_EQ(text.bytes, "not json at all");
}

}  // namespace
