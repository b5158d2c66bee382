// The binary `deliver` header (mqs/PROTOCOL.md *Binary deliver*): what a host reads from it is
// what it reads from the JSON header of the same delivery, and a damaged one is an error, never
// another delivery.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/wire/record.hpp"

namespace dde::mqs {
namespace {

/// The one record in `batch`: its header and body as framed.
wire::framed_record only_record(const std::string& batch) {
  auto framed = wire::split_batch(batch, 1 << 20);
  EXPECT_TRUE(framed.error.empty()) << framed.error;
  EXPECT_EQ(framed.records.size(), 1u);
  return framed.records.empty() ? wire::framed_record{} : framed.records[0];
}

deliver_record read_deliver(std::string_view header) {
  auto parsed = read_mqs_record(header);
  EXPECT_TRUE(parsed) << (parsed ? "" : parsed.error());
  if (!parsed || !std::holds_alternative<deliver_record>(parsed.value())) return {};
  return std::get<deliver_record>(parsed.value());
}

std::vector<message_props> cases() {
  std::vector<message_props> c(6);
  c[1].message_id = "0b1c2d3e-aaaa-bbbb-cccc-000000000001";
  c[1].app_id = "sys/producer";
  c[1].published_us = 1'790'000'000'123'456;
  c[2] = c[1];
  c[2].content_type = "application/octet-stream";
  c[2].headers = {
      {"attempt", "3"}, {"deadLetter", R"({"reason":"a \"quoted\" \\ why\n"})"}, {"replyTo", "s/r"}};
  c[3].published_us = 7;  // a stamp and nothing else
  c[4].app_id = "x";
  c[4].headers = {{"traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}};
  c[5].headers = {{"empty", ""}};
  return c;
}

TEST(BinaryDeliver, AHostReadsWhatTheJsonHeaderOfTheSameDeliveryGives) {
  auto all = cases();
  for (std::size_t i = 0; i < all.size(); ++i) {
    for (bool redelivered : {false, true}) {
      const std::uint64_t tag = 18'446'744'073'709'551'615u - i;
      std::string json, binary;
      append_deliver(json, "sys.pool", tag, redelivered, "{\"seq\":1}", all[i], deliver_header::json);
      append_deliver(binary, "sys.pool", tag, redelivered, "{\"seq\":1}", all[i], deliver_header::binary);
      auto j = only_record(json), b = only_record(binary);
      ASSERT_FALSE(b.header.empty());
      EXPECT_EQ(b.header.front(), binary_deliver_mark) << "case " << i;
      EXPECT_EQ(b.body, "{\"seq\":1}");
      EXPECT_EQ(read_deliver(b.header), read_deliver(j.header))
          << "case " << i << " redelivered " << redelivered;
      EXPECT_LT(b.header.size(), j.header.size()) << "case " << i;
    }
  }
}

TEST(BinaryDeliver, HeadersOutOfOrderOrRepeatedReadAsTheJsonHeaderGivesThem) {
  // A broker's header table may hold a name twice (a raw AMQP publisher's), in any order: the host
  // gets them in name order, once each, the last value of a repeated name, as from a JSON header.
  message_props p;
  p.headers = {{"b", "1"}, {"a", "first"}, {"", "x"}, {"a", "last"}, {"", ""}};
  std::string json, binary;
  append_deliver(json, "sys.pool", 7, false, "{}", p, deliver_header::json);
  append_deliver(binary, "sys.pool", 7, false, "{}", p, deliver_header::binary);
  const auto from_binary = read_deliver(only_record(binary).header);
  const std::vector<std::pair<std::string, std::string>> expected{{"", ""}, {"a", "last"}, {"b", "1"}};
  EXPECT_EQ(from_binary.props.headers, expected);
  EXPECT_EQ(read_deliver(only_record(json).header).props.headers, expected);
}

TEST(BinaryDeliver, EveryTruncationAndEveryExtraByteIsAnErrorNamingTheBinaryHeader) {
  std::string batch;
  append_deliver(batch, "sys.pool", 42, true, "", cases()[2], deliver_header::binary);
  const std::string header(only_record(batch).header);
  ASSERT_TRUE(parse_binary_deliver(header));
  for (std::size_t n = 1; n < header.size(); ++n) {
    EXPECT_FALSE(parse_binary_deliver(header.substr(0, n))) << n << " bytes";
    auto parsed = read_mqs_record(header.substr(0, n));
    ASSERT_FALSE(parsed) << n << " bytes";
    EXPECT_NE(parsed.error().find("binary deliver header"), std::string::npos) << parsed.error();
  }
  EXPECT_FALSE(read_mqs_record(header + "x")) << "a byte left over";
  auto unknown_flag = header;
  unknown_flag[1] = char(unknown_flag[1] | 0x80);
  EXPECT_FALSE(read_mqs_record(unknown_flag)) << "a flag this host does not know";
  message_props stamped;
  stamped.published_us = 1;
  batch.clear();
  append_deliver(batch, "p.q", 1, false, "", stamped, deliver_header::binary);
  std::string zero_stamp(only_record(batch).header);
  zero_stamp[10] = 0;  // the stamp's only set byte (mark, flags, 8 bytes of tag, then the stamp)
  EXPECT_FALSE(read_mqs_record(zero_stamp)) << "a stamp flag with a zero stamp";
  for (auto form : {deliver_header::binary, deliver_header::json}) {
    batch.clear();
    append_deliver(batch, "sys\x0epool", 1, false, "", {}, form);  // (found by the fuzzer)
    auto bad = read_mqs_record(only_record(batch).header);
    EXPECT_FALSE(bad) << "a topic that is not a topic name, however it comes";
  }
}

TEST(BinaryDeliver, AFieldTooLongForTheBinaryHeaderGoesAsJson) {
  // (Such a header is over the 64 KiB a record header may have either way: the fallback keeps the
  // binary form from ever cutting a length short.)
  message_props p;
  p.headers = {{std::string(70'000, 'n'), "v"}};
  std::string batch;
  append_deliver(batch, "sys.pool", 3, false, "b", p, deliver_header::binary);
  ASSERT_GT(batch.size(), 5u);
  std::size_t size = 0;
  for (int i = 3; i >= 0; --i) size = (size << 8) | static_cast<unsigned char>(batch[std::size_t(i)]);
  ASSERT_LE(4 + size, batch.size());
  EXPECT_EQ(batch[4], '{');
  auto d = read_deliver(std::string_view(batch).substr(4, size));
  ASSERT_EQ(d.props.headers.size(), 1u);
  EXPECT_EQ(d.props.headers[0].first.size(), 70'000u);
}

TEST(BinaryDeliver, AHelloAsksForItAndTheWelcomeSaysSo) {
  std::string out;
  append(out, hello_request{wire::protocol_version, "sys", "0b1c2d3e-aaaa-bbbb-cccc-000000000001", true});
  auto decoded = wire::decode_batch(out, 1 << 20);
  ASSERT_EQ(decoded.records.size(), 1u);
  EXPECT_EQ(decoded.records[0].header.value("deliver", ""), "binary");
  auto parsed = parse_request(decoded.records[0].header);
  ASSERT_TRUE(parsed.req) << parsed.error;
  EXPECT_TRUE(std::get<hello_request>(*parsed.req).binary_deliver);

  auto plain = decoded.records[0].header;
  plain.erase("deliver");
  EXPECT_FALSE(std::get<hello_request>(*parse_request(plain).req).binary_deliver) << "JSON unless asked";
  auto bad = decoded.records[0].header;
  bad["deliver"] = "xml";
  auto refused = parse_request(bad);
  EXPECT_FALSE(refused.req);
  EXPECT_NE(refused.error.find("\"deliver\""), std::string::npos) << refused.error;

  for (bool binary : {false, true}) {
    out.clear();
    append_welcome(out, "mqs-1", binary);
    auto w = read_mqs_record(only_record(out).header);
    ASSERT_TRUE(w);
    EXPECT_EQ(std::get<welcome_record>(w.value()).binary, binary);
  }
}

}  // namespace
}  // namespace dde::mqs
