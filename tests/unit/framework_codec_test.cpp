#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "dde/core/base64.hpp"
#include "dde/core/command_line.hpp"
#include "dde/core/daemon.hpp"
#include "dde/core/metrics.hpp"
#include "dde/core/net/url.hpp"
#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/net/http_client.hpp"
#include "dde/net/ws.hpp"
#include "dde/wire/record.hpp"

namespace {

TEST(Envelope, TheRetryAttemptTravelsInAHeader) {
  dde::envelope e;
  e.id = "m1";
  e.from = "sys/producer";
  e.to = "sys/pool";
  e.body = {{"seq", 5}};
  e.attempt = 2;
  auto m = dde::split_envelope(e, "dde.delay-1000.sys.pool");
  auto props = nlohmann::json::parse(m.props);
  EXPECT_EQ(props["headers"]["attempt"], "2");
  EXPECT_EQ(props["headers"]["to"], "sys/pool") << "a delay queue's name is not the pool's";
  auto back = dde::join_envelope(props, "sys.pool", m.payload);
  EXPECT_EQ(back.attempt, 2);
  EXPECT_EQ(back.to, "sys/pool");
  EXPECT_EQ(back.body, e.body);
  e.attempt = 0;
  EXPECT_FALSE(nlohmann::json::parse(dde::split_envelope(e, "sys.pool").props).contains("headers"));
  for (auto bad : {"0", "-1", "11", "x", "1.5", ""}) {
    props["headers"]["attempt"] = bad;
    EXPECT_EQ(dde::join_envelope(props, "sys.pool", m.payload).attempt, 0) << bad;
  }
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

TEST(Urls, ABracketedIpv6HostIsAHostAndAPort) {
  // Split by hand at the first ':', "--registry http://[::1]:8000" would ask the resolver for "[::1]:8000".
  auto http = dde::net::parse_http_url("http://[::1]:8000/registry/health?x=1#top");
  ASSERT_TRUE(http);
  EXPECT_EQ(http->host, "::1");
  EXPECT_EQ(http->port, 8000);
  EXPECT_EQ(http->target, "/registry/health?x=1");
  auto ws = dde::net::parse_ws_url("ws://[::1]:28000/registry");
  ASSERT_TRUE(ws);
  EXPECT_EQ(ws->host, "::1");
  EXPECT_EQ(ws->port, 28000);
  EXPECT_EQ(ws->path, "/registry");
  auto secure = dde::net::parse_ws_url("wss://[2001:db8::7]/mqs");
  ASSERT_TRUE(secure);
  EXPECT_EQ(secure->port, 443);
  EXPECT_TRUE(secure->tls);
  EXPECT_EQ(dde::net::host_port("::1", 8000), "[::1]:8000");
  EXPECT_EQ(dde::net::host_port("127.0.0.1", 8000), "127.0.0.1:8000");
}

TEST(Urls, DefaultsAndWhatIsNotAUrlWeTake) {
  auto bare = dde::net::parse_http_url("HTTPS://Example.org");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->port, 443);
  EXPECT_EQ(bare->target, "/");
  EXPECT_EQ(dde::net::parse_http_url("http://h?q=1")->target, "/?q=1");
  EXPECT_EQ(dde::net::parse_ws_url("ws://h:1")->path, "/");
  for (auto bad : {"http://[::1:8000/", "http://h:0/", "http://h:65536/", "http://h:80x/", "http:///x",
                   "http://user@h/", "ftp://h/", "ws://a b/", "127.0.0.1:8000", ""})
    EXPECT_FALSE(dde::net::parse_http_url(bad) || dde::net::parse_ws_url(bad)) << bad;
}

TEST(SystemdNotify, NothingIsSentWithoutANotifySocket) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(dde::notify_ready("listening"));
  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  EXPECT_FALSE(dde::notify_ready("listening")) << "only absolute or abstract (@) sockets";
  ::unsetenv("NOTIFY_SOCKET");
}

TEST(SystemdNotify, ReadyGoesToAnAbstractSocketAsOneDatagram) {
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  std::string name = "@dde-notify-test-" + std::to_string(::getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  addr.sun_path[0] = '\0';
  ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr),
                   socklen_t(offsetof(sockaddr_un, sun_path) + name.size())),
            0);
  ::setenv("NOTIFY_SOCKET", name.c_str(), 1);
  EXPECT_TRUE(dde::notify_ready("listening on port 8000"));
  EXPECT_TRUE(dde::notify_stopping());
  ::unsetenv("NOTIFY_SOCKET");
  char buf[256] = {};
  auto n = ::recv(fd, buf, sizeof buf, 0);
  EXPECT_EQ(std::string(buf, std::size_t(std::max<ssize_t>(n, 0))), "READY=1\nSTATUS=listening on port 8000");
  n = ::recv(fd, buf, sizeof buf, 0);
  EXPECT_EQ(std::string(buf, std::size_t(std::max<ssize_t>(n, 0))), "STOPPING=1");
  ::close(fd);
}

TEST(Metrics, AHistogramRendersCumulativeBucketsItsSumAndCount) {
  dde::metrics_registry r;
  auto& h = r.histogram("x_seconds", "Time of x.", {0.25, 1}, {{"pool", "a.b"}});
  for (double v : {0.125, 0.25, 0.5, 3.0}) h.observe(v);  // exact in binary: the sum prints exactly
  auto& bare = r.histogram("y_seconds", "Time of y.", {1});
  bare.observe(2);
  EXPECT_EQ(r.render(),
            "# HELP x_seconds Time of x.\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{pool=\"a.b\",le=\"0.25\"} 2\n"
            "x_seconds_bucket{pool=\"a.b\",le=\"1\"} 3\n"
            "x_seconds_bucket{pool=\"a.b\",le=\"+Inf\"} 4\n"
            "x_seconds_sum{pool=\"a.b\"} 3.875\n"
            "x_seconds_count{pool=\"a.b\"} 4\n"
            "# HELP y_seconds Time of y.\n"
            "# TYPE y_seconds histogram\n"
            "y_seconds_bucket{le=\"1\"} 0\n"
            "y_seconds_bucket{le=\"+Inf\"} 1\n"
            "y_seconds_sum 2\n"
            "y_seconds_count 1\n");
}

TEST(Metrics, AQuantileIsInterpolatedInsideItsBucketAsPrometheusDoes) {
  dde::metric_histogram h({1, 2, 4});
  EXPECT_FALSE(dde::quantile(h, 0.5)) << "nothing observed yet";
  for (double v : {0.5, 1.5, 1.5, 3.0}) h.observe(v);
  EXPECT_DOUBLE_EQ(*dde::quantile(h, 0.25), 1.0);   // rank 1: the top of the first bucket
  EXPECT_DOUBLE_EQ(*dde::quantile(h, 0.5), 1.5);    // rank 2: halfway through (1, 2]
  EXPECT_DOUBLE_EQ(*dde::quantile(h, 0.875), 3.0);  // rank 3.5: halfway through (2, 4]
  h.observe(100);
  EXPECT_DOUBLE_EQ(*dde::quantile(h, 1.0), 4.0) << "above the last bound: that bound";
}

TEST(Metrics, TheProcessFiguresAndTheBuildAreThere) {
  dde::metrics_registry r;
  dde::add_process_metrics(r);
  auto text = r.render();
  for (auto family :
       {"# TYPE process_cpu_seconds_total counter", "# TYPE process_resident_memory_bytes gauge",
        "# TYPE process_virtual_memory_bytes gauge", "# TYPE process_open_fds gauge",
        "# TYPE process_max_fds gauge", "# TYPE process_start_time_seconds gauge",
        "# TYPE dde_build_info gauge"})
    EXPECT_NE(text.find(family), std::string::npos) << family << " in\n" << text;
  EXPECT_NE(text.find(std::string("dde_build_info{version=\"") + dde::version() + "\"} 1\n"),
            std::string::npos)
      << text;
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

// An envelope with every field that travels in the broker's headers (or the fixed properties) set.
dde::envelope with_every_header_field() {
  dde::envelope e;
  e.id = "id \"quoted\"";
  e.from = "sys/supplier";
  e.to = "sys/requester";
  e.in_reply_to = "asked-1";
  e.to_worker = "w-2";
  e.reply_to = "sys/elsewhere";
  e.ask_instance = "inst";
  e.ask_worker = "w-9";
  e.dead_letter = {{"reason", "boom"}, {"attempts", 3}};
  return e;
}

TEST(Envelope, APlainSendSplitsIntoThePayloadAndTwoPropertiesAndJoinsBack) {
  dde::envelope e;
  e.id = dde::new_uuid();
  e.from = "sys/producer";
  e.to = "sys/consumer";
  e.body = {{"seq", 7}, {"pad", std::string(34, 'x')}};
  auto m = dde::split_envelope(e, "sys.consumer");
  // The broker gets the body alone: a 64-byte payload stays a 64-byte AMQP body.
  EXPECT_EQ(m.payload, e.body.dump());
  EXPECT_EQ(nlohmann::json::parse(m.props), (nlohmann::json{{"messageId", e.id}, {"appId", "sys/producer"}}));
  auto back = dde::join_envelope(nlohmann::json::parse(m.props), "sys.consumer", m.payload);
  EXPECT_EQ(back.id, e.id);
  EXPECT_EQ(back.from, "sys/producer");
  EXPECT_EQ(back.to, "sys/consumer");  // from the topic
  EXPECT_EQ(back.body, e.body);
  EXPECT_FALSE(back.is_bytes);
}

TEST(Envelope, JoiningOwnedPropertiesGivesWhatJoiningTheirViewGivesAndTakesTheirIdAndSender) {
  // Every field an envelope can carry at the broker, a bytes payload, an envelope without props
  // (read whole) and a payload from another publisher.
  dde::envelope full = with_every_header_field();
  full.attempt = 2;
  full.traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  full.body = {{"seq", 1}};
  dde::envelope bytes = full;
  bytes.is_bytes = true;
  bytes.body = nullptr;
  bytes.bytes = std::string("\x00\xff raw", 6);
  dde::envelope plain;
  plain.id = dde::new_uuid();
  plain.from = "sys/producer";
  plain.body = {{"pad", std::string(40, 'x')}, {"seq", 7}};
  for (const auto* e : {&full, &bytes, &plain}) {
    auto m = dde::split_envelope(*e, "sys.pool");
    dde::delivered_props owned;
    dde::read_delivered_props(nlohmann::json::parse(m.props), owned);
    auto by_view = dde::join_envelope(owned.view(), "sys.pool", m.payload);
    auto by_move = dde::join_envelope(std::move(owned), "sys.pool", m.payload);
    EXPECT_EQ(dde::encode_envelope(by_move), dde::encode_envelope(by_view));
    EXPECT_EQ(by_move.attempt, by_view.attempt);
    EXPECT_EQ(by_move.id, e->id);
    EXPECT_EQ(by_move.from, e->from);
    EXPECT_EQ(by_move.is_bytes, e->is_bytes);
  }
  EXPECT_EQ(
      dde::join_envelope(dde::delivered_props{}, "sys.pool", R"({"id":"w","from":"a/b","body":5})").body, 5);
  auto foreign = dde::join_envelope(dde::delivered_props{}, "sys.pool", "not json");
  EXPECT_EQ(foreign.from, dde::external_sender);
  EXPECT_TRUE(foreign.is_bytes);
  EXPECT_EQ(foreign.bytes, "not json");
}

TEST(Envelope, ARecipientTheTopicDoesNotNameTravelsInTheHeaders) {
  // Only "sys/pool" on "sys.pool" is left to the topic; any other recipient, even one of the same
  // length or differing in one part, goes in the headers and comes back as it was.
  for (const char* to : {"sys/consumex", "sys.consumer", "syz/consumer", "sys/consumer2", "other/pool"}) {
    SCOPED_TRACE(to);
    dde::envelope e;
    e.id = "m";
    e.from = "sys/producer";
    e.to = to;
    e.body = 1;
    auto m = dde::split_envelope(e, "sys.consumer");
    auto props = nlohmann::json::parse(m.props);
    ASSERT_TRUE(props.contains("headers"));
    EXPECT_EQ(props["headers"]["to"], to);
    EXPECT_EQ(dde::join_envelope(props, "sys.consumer", m.payload).to, to);
  }
  dde::envelope e;
  e.from = "sys/producer";
  e.body = 1;
  EXPECT_FALSE(
      nlohmann::json::parse(dde::split_envelope(e, dde::reply_topic("inst")).props).contains("headers"))
      << "no recipient, no header";
}

TEST(Envelope, EveryOtherFieldTravelsInHeadersAndBytesGoAsTheyAre) {
  dde::envelope e = with_every_header_field();
  e.is_bytes = true;
  e.bytes = std::string("\x00\xff{not json", 11);
  const std::string reply_topic = dde::reply_topic("inst");
  auto m = dde::split_envelope(e, reply_topic);
  EXPECT_EQ(m.payload, e.bytes);
  auto props = nlohmann::json::parse(m.props);
  EXPECT_EQ(props["contentType"], "application/octet-stream");
  EXPECT_EQ(props["headers"]["to"], "sys/requester");  // a reply queue names no address
  auto back = dde::join_envelope(props, reply_topic, m.payload);
  EXPECT_EQ(back.id, e.id);
  EXPECT_EQ(back.to, e.to);
  EXPECT_EQ(back.in_reply_to, e.in_reply_to);
  EXPECT_EQ(back.to_worker, e.to_worker);
  EXPECT_EQ(back.reply_to, e.reply_to);
  EXPECT_EQ(back.ask_instance, e.ask_instance);
  EXPECT_EQ(back.ask_worker, e.ask_worker);
  EXPECT_EQ(back.dead_letter, e.dead_letter);
  EXPECT_TRUE(back.is_bytes);
  EXPECT_EQ(back.bytes, e.bytes);
}

TEST(Envelope, ADeliveryWithoutPropsIsReadAsAWholeEnvelopeOrAPlainPayload) {
  dde::envelope e;
  e.id = "old-1";
  e.from = "sys/old";
  e.to = "sys/consumer";
  e.body = {{"n", 1}};
  auto whole = dde::join_envelope(nullptr, "sys.consumer", dde::encode_envelope(e));
  EXPECT_EQ(whole.id, "old-1");
  EXPECT_EQ(whole.from, "sys/old");
  EXPECT_EQ(whole.body, e.body);
  auto plain = dde::join_envelope(nullptr, "sys.consumer", "{\"order\":5}");
  EXPECT_EQ(plain.from, "external");
  EXPECT_EQ(plain.body, (nlohmann::json{{"order", 5}}));
  // An AMQP publisher that names itself in app-id is the sender; a body that is not JSON is bytes.
  auto named = dde::join_envelope(nlohmann::json{{"appId", "billing"}}, "sys.consumer", "not json");
  EXPECT_EQ(named.from, "billing");
  EXPECT_TRUE(named.is_bytes);
  EXPECT_EQ(named.bytes, "not json");
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
