// The dead-letter endpoints of the registry and ddectl without sockets: the pool's MQS found from what
// scripted nodes describe, the call forwarded to a fake MQS, bad input answered precisely; ddectl's
// calls and what it prints.
#include <gtest/gtest.h>

#include <sstream>

#include "dde/registry/ctl_commands.hpp"
#include "dde/registry/ctl_output.hpp"
#include "dlq_api.hpp"
#include "registry_fakes.hpp"
#include "rest_api.hpp"

namespace dde::registry::test {
namespace {

/// A registry with one node running shop/orders on MQS ws://10.0.0.5:42043/mqs, and an MQS the test answers.
class RegistryDlq : public ::testing::Test {
 protected:
  RegistryDlq() {
    api.set_mqs_http([this](mqs_call call, std::function<void(mqs_reply)> done) {
      calls.push_back(call);
      pending.push_back(std::move(done));
    });
  }
  /// Sends a request; the node's describe is answered with `described`.
  void send(const std::string& method, const std::string& target, const std::string& body = "",
            json described = {
                {"shop", json::array({{{"id", "shop/orders"},
                                       {"messageQueuingSystemServer", "ws://10.0.0.5:42043/mqs"}}})}}) {
    api.handle({method, target, body, "test"}, [this](rest_reply r) { replies.push_back(std::move(r)); });
    auto requests = node.link->requests();
    if (!requests.empty() && requests.back()["action"] == "describe" && answered < requests.size()) {
      answered = requests.size();
      node.ok(requests.back()["id"].get<std::uint64_t>(), std::move(described));
    }
  }
  void mqs_answers(int status, json body) {
    ASSERT_FALSE(pending.empty());
    auto done = std::move(pending.front());
    pending.erase(pending.begin());
    done(mqs_reply{true, status, body.dump(), {}});
  }
  node_table table{node_table::options{}};
  scripted_node node{table, 1};
  rest_api api{table};
  std::size_t answered = 0;
  std::vector<mqs_call> calls;
  std::vector<std::function<void(mqs_reply)>> pending;
  std::vector<rest_reply> replies;
};

TEST_F(RegistryDlq, AListIsForwardedToThePoolsMqsAndNamesThePool) {
  send("GET", "/registry/dlq/shop/orders?limit=5");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "GET");
  EXPECT_EQ(calls[0].url, "http://10.0.0.5:42043/dlq?topic=shop.orders&limit=5");
  mqs_answers(200, {{"topic", "shop.orders"}, {"depth", 1}, {"messages", json::array({{{"id", "m-1"}}})}});
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 200);
  EXPECT_EQ(replies[0].body["pool"], "shop/orders");
  EXPECT_EQ(replies[0].body["mqs"], "ws://10.0.0.5:42043/mqs");
  EXPECT_EQ(replies[0].body["messages"][0]["id"], "m-1");
}

TEST_F(RegistryDlq, ShowAnswersTheOneMessageOr404) {
  send("GET", "/registry/dlq/shop/orders/m%201");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].url, "http://10.0.0.5:42043/dlq?topic=shop.orders&id=m%201");
  mqs_answers(200, {{"depth", 3}, {"messages", json::array({{{"id", "m 1"}, {"reason", "rejected"}}})}});
  EXPECT_EQ(replies.at(0).body["id"], "m 1");
  EXPECT_EQ(replies.at(0).body["reason"], "rejected");

  send("GET", "/registry/dlq/shop/orders/gone");
  mqs_answers(404,
              {{"error", "no message \"gone\" in dde.dead.shop.orders (looked through 3 of its messages)"}});
  EXPECT_EQ(replies.at(1).status, 404);
  EXPECT_EQ(replies.at(1).body["error"], "no dead letter \"gone\" for shop/orders");
}

TEST_F(RegistryDlq, ReplayOfIdsOrOfEverythingBecomesTheMqsBody) {
  send("POST", "/registry/dlq/shop/orders/replay", R"({"ids":["a","b"]})");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "POST");
  EXPECT_EQ(calls[0].url, "http://10.0.0.5:42043/dlq/replay");
  EXPECT_EQ(nlohmann::json::parse(calls[0].body),
            (nlohmann::json{{"topic", "shop.orders"}, {"ids", {"a", "b"}}}));
  mqs_answers(200, {{"replayed", 1}, {"missing", {"b"}}});
  EXPECT_EQ(replies.at(0).body["replayed"], 1);
  EXPECT_EQ(replies.at(0).body["missing"], json::array({"b"}));

  send("POST", "/registry/dlq/shop/orders/replay", "{}");
  EXPECT_EQ(nlohmann::json::parse(calls.at(1).body),
            (nlohmann::json{{"topic", "shop.orders"}, {"all", true}}));
  send("POST", "/registry/dlq/shop/orders/purge", "");
  EXPECT_EQ(calls.at(2).url, "http://10.0.0.5:42043/dlq/purge");
  EXPECT_EQ(json::parse(calls.at(2).body), (json{{"topic", "shop.orders"}}));
}

TEST_F(RegistryDlq, AnUnknownPoolIsA404ThatSaysWhy) {
  send("GET", "/registry/dlq/shop/nothing");
  EXPECT_TRUE(calls.empty());
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].status, 404);
  EXPECT_EQ(replies[0].body["error"],
            "no node runs pool shop/nothing (GET /registry/status), so its MQS is unknown");
}

TEST_F(RegistryDlq, BadInputIsRefusedBeforeAnyNodeOrMqsIsAsked) {
  send("GET", "/registry/dlq/sh%20op/orders");
  EXPECT_EQ(replies.at(0).status, 400);
  EXPECT_NE(replies.at(0).body["error"].get<std::string>().find("is not a pool address"), std::string::npos);
  send("POST", "/registry/dlq/shop/orders/replay", R"({"ids":"a"})");
  EXPECT_EQ(replies.at(1).status, 400);
  EXPECT_EQ(replies.at(1).body["error"],
            "\"ids\" must be a non-empty array of message ids (or leave it out: every message)");
  send("POST", "/registry/dlq/shop/orders/replay", "{");
  EXPECT_EQ(replies.at(2).status, 400);
  send("POST", "/registry/dlq/shop/orders/purge", R"({"limit":3})");
  EXPECT_EQ(replies.at(3).status, 400);
  EXPECT_EQ(replies.at(3).body["error"], "unknown field \"limit\"; a purge takes ids (none: every message)");
  send("DELETE", "/registry/dlq/shop/orders");
  EXPECT_EQ(replies.at(4).status, 405);
  EXPECT_EQ(replies.at(4).headers.at("Allow"), "GET");
  send("POST", "/registry/dlq/shop/orders/other");
  EXPECT_EQ(replies.at(5).status, 404);
  send("GET", "/registry/dlq/shop");
  EXPECT_EQ(replies.at(6).status, 404);
  EXPECT_TRUE(calls.empty());
  EXPECT_TRUE(node.link->requests().empty());
}

TEST_F(RegistryDlq, AnMqsThatDoesNotAnswerIsA502) {
  send("GET", "/registry/dlq/shop/orders");
  ASSERT_EQ(pending.size(), 1u);
  pending[0](mqs_reply{false, 0, {}, "connection refused"});
  EXPECT_EQ(replies.at(0).status, 502);
  EXPECT_EQ(replies.at(0).body["error"],
            "the MQS of shop/orders (ws://10.0.0.5:42043/mqs) did not answer: connection refused");
}

TEST(RegistryDlqUrl, TheMqsHttpBaseComesFromItsWebSocketUrl) {
  EXPECT_EQ(mqs_http_base("ws://10.0.0.5:42043/mqs"), "http://10.0.0.5:42043");
  EXPECT_EQ(mqs_http_base("wss://mqs.example:443/mqs"), "https://mqs.example:443");
  EXPECT_EQ(mqs_http_base("http://x/mqs"), std::nullopt);
}

ctl::invocation parse(std::vector<std::string> args) {
  std::istringstream in;
  return ctl::parse_invocation(args, in);
}

TEST(CtlDlq, EachSubcommandIsItsRestCall) {
  auto list = parse({"dlq", "list", "shop/orders", "--limit", "5"});
  ASSERT_TRUE(list.call) << list.error;
  EXPECT_EQ(list.call->method, "GET");
  EXPECT_EQ(list.call->path, "/registry/dlq/shop/orders?limit=5");
  EXPECT_EQ(parse({"dlq", "show", "shop/orders", "a b"}).call->path, "/registry/dlq/shop/orders/a%20b");
  auto replay = parse({"dlq", "replay", "shop/orders", "a", "b"});
  ASSERT_TRUE(replay.call) << replay.error;
  EXPECT_EQ(replay.call->method, "POST");
  EXPECT_EQ(replay.call->path, "/registry/dlq/shop/orders/replay");
  EXPECT_EQ(json::parse(replay.call->body), (json{{"ids", {"a", "b"}}}));
  EXPECT_EQ(json::parse(parse({"dlq", "replay", "shop/orders", "--all"}).call->body), json::object());
  auto purge = parse({"dlq", "purge", "shop/orders", "--all"});
  EXPECT_EQ(purge.call->path, "/registry/dlq/shop/orders/purge");
  EXPECT_EQ(json::parse(purge.call->body), json::object());
}

TEST(CtlDlq, BadUsageSaysWhatIsMissing) {
  EXPECT_EQ(parse({"dlq", "replay", "shop/orders"}).error, "dlq replay needs message ids or --all");
  EXPECT_EQ(parse({"dlq", "purge", "shop/orders", "a", "--all"}).error,
            "dlq purge takes message ids or --all, not both");
  EXPECT_EQ(parse({"dlq", "list", "shop"}).error, "\"shop\" is not a pool address system/pool");
  EXPECT_EQ(parse({"dlq", "drop", "shop/orders"}).error,
            "dlq needs list, show, replay or purge, got \"drop\"");
  EXPECT_EQ(parse({"dlq", "show", "shop/orders"}).error, "usage: ddectl dlq show SYSTEM/POOL ID");
}

TEST(CtlDlq, ListIsATableAndReplayAndPurgeAreSentences) {
  json body = {
      {"pool", "shop/orders"},
      {"depth", 2},
      {"messages",
       {{{"id", "m-1"}, {"reason", "rejected"}, {"attempts", 1}, {"at", 1000000}, {"size", 9}},
        {{"id", "m-2"},
         {"reason", "rate limited 4 time(s), retry limit 3 reached; last reason: the API said 429 slow down"},
         {"attempts", 4},
         {"md5", "0123456789abcdef0123456789abcdef"},
         {"at", 1000000 - 3600 * 1000},
         {"size", 120}}}}};
  EXPECT_EQ(
      ctl::dlq_table(body, 1000000 + 42000),
      "2 of 2 dead letter(s) of shop/orders\n"
      "ID   REASON                                                        ATTEMPTS  MD5           AGE  SIZE\n"
      "m-1  rejected                                                      1         -             42s  9\n"
      "m-2  rate limited 4 time(s), retry limit 3 reached; last reaso...  4         0123456789ab  60m  "
      "120\n");
  EXPECT_EQ(ctl::render("dlq", {"replay", "shop/orders", "a", "b", "c"},
                        json{{"replayed", 3}, {"missing", json::array()}, {"pool", "shop/orders"}},
                        ctl::output_format::table),
            "replayed 3 of 3 to shop/orders\n");
  EXPECT_EQ(ctl::render("dlq", {"replay", "shop/orders", "a", "b"},
                        json{{"replayed", 1}, {"missing", {"b"}}, {"pool", "shop/orders"}},
                        ctl::output_format::table),
            "replayed 1 of 2 to shop/orders; not found: b\n");
  EXPECT_EQ(ctl::render("dlq", {"purge", "shop/orders"}, json{{"purged", 7}}, ctl::output_format::table),
            "purged 7 dead letter(s) of shop/orders\n");
  EXPECT_EQ(ctl::render("dlq", {"list", "shop/orders"}, json{{"depth", 0}, {"messages", json::array()}},
                        ctl::output_format::json),
            json({{"depth", 0}, {"messages", json::array()}}).dump(2) + "\n");
}

}  // namespace
}  // namespace dde::registry::test
