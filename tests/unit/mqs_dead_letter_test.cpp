// Dead letters without a broker: how each kind reads in a listing, what a replay publishes, and the
// checks of the DLQ endpoints' requests.
#include <gtest/gtest.h>

#include "dde/core/base64.hpp"
#include "dde/envelope.hpp"
#include "dead_letter.hpp"

namespace dde::mqs {
namespace {

using json = nlohmann::json;

/// What router::dead_letter enqueues: the whole envelope, with deadLetter, as JSON in the body.
dead_message host_letter(const std::string& id, json body) {
  envelope e;
  e.id = id;
  e.from = "shop/producer";
  e.to = "shop/orders";
  e.reply_to = "shop/audit";
  e.body = std::move(body);
  e.dead_letter = {{"reason", "rate limited 4 time(s)"},
                   {"attempts", 4},
                   {"pool", "shop/orders"},
                   {"at", 1700000000123},
                   {"md5", "0123456789abcdef0123456789abcdef"}};
  dead_message m;
  m.body = encode_envelope(e);
  return m;
}

/// What the broker moves: the message as the MQS published it, plus its record of the death.
dead_message broker_letter(const std::string& id, std::string body) {
  dead_message m;
  m.props.message_id = id;
  m.props.app_id = "shop/producer";
  m.props.headers = {{"replyTo", "shop/audit"},
                     {"x-first-death-reason", "delivery_limit"},
                     {"x-first-death-queue", "shop.orders"},
                     {"x-first-death-exchange", ""}};
  m.props.published_us = 1700000000000000;
  m.body = std::move(body);
  m.death_reason = "delivery_limit";
  m.death_queue = "shop.orders";
  m.death_time_s = 1700000001;
  m.death_count = 1;
  m.delivery_count = 20;
  return m;
}

TEST(DeadLetter, TheHostsOwnShowsReasonAttemptsMd5AndThePayload) {
  auto d = describe_dead_letter(host_letter("m-1", {{"seq", 7}}), "shop.orders");
  EXPECT_EQ(d["id"], "m-1");
  EXPECT_EQ(d["source"], "host");
  EXPECT_EQ(d["reason"], "rate limited 4 time(s)");
  EXPECT_EQ(d["attempts"], 4);
  EXPECT_EQ(d["md5"], "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(d["pool"], "shop/orders");
  EXPECT_EQ(d["at"], 1700000000123);
  EXPECT_EQ(d["body"], R"({"seq":7})") << "the payload, not the envelope around it";
  EXPECT_EQ(d["size"], 9);
  EXPECT_FALSE(d.contains("encoding"));
}

TEST(DeadLetter, TheBrokersShowsItsDeathReasonAndTheDeliveriesItHad) {
  auto d = describe_dead_letter(broker_letter("m-2", R"({"seq":8})"), "shop.orders");
  EXPECT_EQ(d["id"], "m-2");
  EXPECT_EQ(d["source"], "broker");
  EXPECT_EQ(d["reason"], "delivery_limit");
  EXPECT_EQ(d["attempts"], 21) << "the quorum queue's delivery limit (20), plus the first delivery";
  EXPECT_FALSE(d.contains("md5")) << "the broker does not know which plugin failed it";
  EXPECT_EQ(d["pool"], "shop/orders");
  EXPECT_EQ(d["at"], 1700000001000);
  EXPECT_EQ(d["body"], R"({"seq":8})");
}

TEST(DeadLetter, ARejectedMessageWasTriedOnceWhateverTheDeadLetterQueueCounted) {
  auto m = broker_letter("m-3", "x");
  m.delivery_count = 2;  // the dead-letter queue's own count: listings give messages back
  m.props.headers = {{"x-first-death-reason", "rejected"}};
  auto d = describe_dead_letter(m, "shop.orders");
  EXPECT_EQ(d["reason"], "rejected");
  EXPECT_EQ(d["attempts"], 1);
}

TEST(DeadLetter, BinaryPayloadsAreShownInBase64AndLongOnesCut) {
  auto bin = broker_letter("b", std::string("\xff\x00\x01", 3));
  auto d = describe_dead_letter(bin, "shop.orders");
  EXPECT_EQ(d["encoding"], "base64");
  EXPECT_EQ(d["body"], base64_encode(std::string("\xff\x00\x01", 3)));
  EXPECT_EQ(d["size"], 3);

  auto long_text = broker_letter("l", std::string(5000, 'a') + "\xc3\xa9");
  auto l = describe_dead_letter(long_text, "shop.orders");
  EXPECT_EQ(l["truncated"], true);
  EXPECT_EQ(l["body"].get<std::string>().size(), dead_letter_body_shown);
  EXPECT_EQ(l["size"], 5002);

  // A cut never splits a character: "é" straddling the 4 KiB mark is left out whole.
  auto straddle = broker_letter("s", std::string(dead_letter_body_shown - 1, 'a') + "\xc3\xa9" + "zz");
  auto s = describe_dead_letter(straddle, "shop.orders");
  EXPECT_EQ(s["body"].get<std::string>(), std::string(dead_letter_body_shown - 1, 'a'));
  EXPECT_FALSE(s.contains("encoding"));
}

TEST(DeadLetter, IdsComeFromTheMessageIdOrTheHostsEnvelope) {
  EXPECT_EQ(dead_letter_id(host_letter("h-1", 1)), "h-1");
  EXPECT_EQ(dead_letter_id(broker_letter("b-1", "{}")), "b-1");
  dead_message plain;
  plain.body = "not an envelope";
  EXPECT_EQ(dead_letter_id(plain), "");
}

TEST(DeadLetter, ReplayingTheHostsOwnPublishesTheEnvelopeSplitWithoutDeadLetter) {
  auto r = replay_of(host_letter("m-1", {{"seq", 7}}), "shop.orders");
  EXPECT_EQ(r.body, R"({"seq":7})");
  EXPECT_EQ(r.props.message_id, "m-1");
  EXPECT_EQ(r.props.app_id, "shop/producer");
  for (auto& [k, v] : r.props.headers) EXPECT_NE(k, "deadLetter");
  // The pool reads it back as the message it was.
  auto e = join_envelope(json::parse(props_json(r.props)), "shop.orders", r.body);
  EXPECT_EQ(e.id, "m-1");
  EXPECT_EQ(e.reply_to, "shop/audit");
  EXPECT_EQ(e.to, "shop/orders");
  EXPECT_EQ(e.body, (json{{"seq", 7}}));
  EXPECT_TRUE(e.dead_letter.is_null());
}

TEST(DeadLetter, ReplayingTheBrokersDropsItsDeathHeadersAndTheOldStamp) {
  auto r = replay_of(broker_letter("m-2", "{}"), "shop.orders");
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(r.props.message_id, "m-2");
  EXPECT_EQ(r.props.app_id, "shop/producer");
  ASSERT_EQ(r.props.headers.size(), 1u);
  EXPECT_EQ(r.props.headers[0].first, "replyTo");
  EXPECT_EQ(r.props.published_us, 0u);
}

TEST(DeadLetterRequests, ListReadsTopicLimitAndId) {
  auto r = parse_dlq_query("/dlq?topic=shop.orders&limit=5&id=m-1");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r.value().topic, "shop.orders");
  EXPECT_EQ(r.value().limit, 5u);
  EXPECT_EQ(r.value().id, "m-1");
  EXPECT_EQ(parse_dlq_query("/dlq?topic=shop.orders").value().limit, dlq_default_limit);
}

TEST(DeadLetterRequests, ListRefusesBadTopicsAndLimitsPrecisely) {
  EXPECT_EQ(parse_dlq_query("/dlq").error(),
            "missing query parameter \"topic\" (GET /dlq?topic=<system>.<pool>)");
  EXPECT_NE(parse_dlq_query("/dlq?topic=shop").error().find("must be a pool's queue"), std::string::npos);
  EXPECT_NE(parse_dlq_query("/dlq?topic=sh%20op.orders").error().find("must be a pool's queue"),
            std::string::npos);
  EXPECT_NE(parse_dlq_query("/dlq?topic=dde.dead.shop.orders").error().find("must be a pool's queue"),
            std::string::npos);
  for (auto bad : {"0", "1001", "x", "5x", "-1"})
    EXPECT_EQ(parse_dlq_query(std::string("/dlq?topic=a.b&limit=") + bad).error(),
              "\"limit\" must be an integer from 1 to 1000")
        << bad;
}

TEST(DeadLetterRequests, ReplayTakesIdsOrAllAndNothingElse) {
  auto ids = parse_replay_body(R"({"topic":"shop.orders","ids":["a","b"]})");
  ASSERT_TRUE(ids) << ids.error();
  EXPECT_EQ(ids.value().ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(ids.value().all);
  auto all = parse_replay_body(R"({"topic":"shop.orders","all":true,"limit":3})");
  ASSERT_TRUE(all) << all.error();
  EXPECT_TRUE(all.value().all);
  EXPECT_EQ(all.value().limit, 3u);

  EXPECT_EQ(parse_replay_body("{").error(), "the body is not JSON");
  EXPECT_EQ(parse_replay_body("[]").error(), "the body must be a JSON object");
  EXPECT_EQ(parse_replay_body(R"({"ids":["a"]})").error(), "missing field \"topic\"");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders"})").error(),
            "say which messages to replay: \"ids\": [...] or \"all\": true");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders","ids":["a"],"all":true})").error(),
            "give either \"ids\" or \"all\": true, not both");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders","ids":[]})").error(),
            "\"ids\" must be a non-empty array of strings");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders","ids":[1]})").error(),
            "\"ids\" must hold message ids: strings of 1 to 255 bytes");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders","all":true,"limit":0})").error(),
            "\"limit\" must be an integer from 1 to 10000");
  EXPECT_EQ(parse_replay_body(R"({"topic":"shop.orders","all":true,"x":1})").error(),
            "unknown field \"x\"; a replay takes topic, ids or all, limit");
}

TEST(DeadLetterRequests, PurgeWithoutIdsTakesEverything) {
  auto all = parse_purge_body(R"({"topic":"shop.orders"})");
  ASSERT_TRUE(all) << all.error();
  EXPECT_TRUE(all.value().all);
  auto some = parse_purge_body(R"({"topic":"shop.orders","ids":["a"]})");
  ASSERT_TRUE(some) << some.error();
  EXPECT_FALSE(some.value().all);
  EXPECT_EQ(parse_purge_body(R"({"topic":"shop.orders","all":true})").error(),
            "unknown field \"all\"; a purge takes topic, ids");
}

TEST(DeadLetter, Utf8IsCheckedStrictly) {
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_TRUE(valid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  EXPECT_FALSE(valid_utf8("\xc3"));          // cut short
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));      // overlong
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(valid_utf8("\xff"));
}

}  // namespace
}  // namespace dde::mqs
