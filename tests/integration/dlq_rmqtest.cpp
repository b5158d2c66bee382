// Dead letters on a real cluster: messages a `faulty` pool dead-letters are listed
// through the registry with why, how often and by which plugin version; once the pool is fixed they are
// replayed, some then all, and each is handled exactly once; purge empties the queue; bad input is
// answered precisely.
#include <algorithm>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

using nlohmann::json;

class DeadLetters : public Cluster {
 protected:
  /// A node with a faulty pool `sys/faulty` (`args`, `supervision`) fed `n` numbered messages.
  std::string start(const std::string& sys, json args, json supervision, int n) {
    node_ = std::make_unique<activator_process>(node("dlq-" + sys));
    auto id = node_id(registry, "dlq-" + sys);
    auto r = deploy_pool(id, sys, "faulty", "faulty", std::move(args), 1, {{"supervision", supervision}});
    EXPECT_EQ(r.status, 200) << r.body;
    r = deploy(
        deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/faulty"}, {"count", n}}));
    EXPECT_EQ(r.status, 200) << r.body;
    return id;
  }
  rest_answer reg(const std::string& method, const std::string& path, const std::string& body = {}) {
    return rest(method, registry.url() + path, body, registry.token);
  }
  rest_answer at_mqs(const std::string& method, const std::string& path, const std::string& body = {}) {
    return rest(method, "http://127.0.0.1:" + std::to_string(mqs.port) + path, body);
  }
  std::size_t dead(const std::string& sys) {
    return shared_broker().queue_depth("dde.dead." + sys + ".faulty").value_or(0);
  }
  json pool_of(const std::string& id, const std::string& sys) {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/faulty") return p;
    return nullptr;
  }
  /// The listed messages' seqs (their bodies are the producer's {"seq": n, ...}), in order.
  static std::vector<std::int64_t> seqs(const json& listing) {
    std::vector<std::int64_t> out;
    for (auto& m : listing["messages"]) out.push_back(json::parse(m["body"].get<std::string>())["seq"]);
    return out;
  }
  static std::string id_of(const json& listing, std::int64_t seq) {
    for (auto& m : listing["messages"])
      if (json::parse(m["body"].get<std::string>())["seq"] == seq) return m["id"];
    return {};
  }
  seq_report handled() { return read_seq_logs(dir, "faulty-"); }
  std::unique_ptr<activator_process> node_;
};

TEST_F(DeadLetters, TheHostsDeadLettersAreListedWithTheirMd5AndReplayedExactlyOnceAfterAFix) {
  auto sys = unique_system("dlqhost");
  auto id = start(sys, {{"throw_on", {3, 5, 7}}}, {{"strategy", "resume"}, {"maxFailures", 2}}, 20);
  ASSERT_TRUE(wait_until([&] { return dead(sys) == 3u && handled().unique.size() >= 17; }, long_wait))
      << pool_of(id, sys).dump();
  auto md5 = pool_of(id, sys)["pluginMd5"].get<std::string>();

  auto list = reg("GET", "/registry/dlq/" + sys + "/faulty");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json["depth"], 3);
  EXPECT_EQ(list.json["pool"], sys + "/faulty");
  auto order = seqs(list.json);  // the order they were dead-lettered in
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted, (std::vector<std::int64_t>{3, 5, 7})) << list.body;
  for (auto& m : list.json["messages"]) {
    EXPECT_EQ(m["source"], "host");
    EXPECT_EQ(m["attempts"], 2);
    EXPECT_NE(m["reason"].get<std::string>().find("supervision.maxFailures 2"), std::string::npos)
        << m.dump();
    EXPECT_EQ(m["md5"], md5) << "the plugin version that failed it";
    EXPECT_EQ(m["pool"], sys + "/faulty");
    EXPECT_GT(m["at"].get<std::int64_t>(), 0);
  }
  // Listing gives the messages back where they were: a second listing shows the same order.
  auto again = reg("GET", "/registry/dlq/" + sys + "/faulty");
  EXPECT_EQ(again.json["messages"], list.json["messages"]) << again.body;

  auto show = reg("GET", "/registry/dlq/" + sys + "/faulty/" + id_of(list.json, 5));
  ASSERT_EQ(show.status, 200) << show.body;
  EXPECT_EQ(show.json["id"], id_of(list.json, 5));
  EXPECT_EQ(json::parse(show.json["body"].get<std::string>())["seq"], 5);
  EXPECT_EQ(reg("GET", "/registry/dlq/" + sys + "/faulty/no-such-id").status, 404);

  // The fix: the pool again, without the fault.
  auto off = reg("POST", "/registry/system/shutdown",
                 json{{"bootstrapperId", id}, {"isolateSystemName", sys}, {"isolateName", "faulty"}}.dump());
  ASSERT_EQ(off.status, 200) << off.body;
  auto fixed = deploy_pool(id, sys, "faulty", "faulty", json::object(), 1);
  ASSERT_EQ(fixed.status, 200) << fixed.body;

  auto some =
      reg("POST", "/registry/dlq/" + sys + "/faulty/replay", json{{"ids", {id_of(list.json, 3)}}}.dump());
  ASSERT_EQ(some.status, 200) << some.body;
  EXPECT_EQ(some.json["replayed"], 1);
  EXPECT_EQ(some.json["missing"], json::array());
  ASSERT_TRUE(wait_until([&] { return handled().unique.count(3) == 1; }, long_wait));
  EXPECT_EQ(dead(sys), 2u);
  order.erase(std::find(order.begin(), order.end(), 3));
  EXPECT_EQ(seqs(reg("GET", "/registry/dlq/" + sys + "/faulty").json), order)
      << "the messages not asked for stay in their order";

  auto all = reg("POST", "/registry/dlq/" + sys + "/faulty/replay", "{}");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.json["replayed"], 2);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() == 20; }, long_wait));
  EXPECT_EQ(dead(sys), 0u);
  auto report = handled();
  EXPECT_TRUE(report.missing(20).empty());
  EXPECT_EQ(report.duplicates(), 0u) << "each replayed message was handled once";

  auto gone =
      reg("POST", "/registry/dlq/" + sys + "/faulty/replay", json{{"ids", {id_of(list.json, 3)}}}.dump());
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_EQ(gone.json["missing"], json::array({id_of(list.json, 3)}));
}

TEST_F(DeadLetters, TheBrokersDeadLettersSayWhyAndPurgeEmptiesTheQueue) {
  auto sys = unique_system("dlqbroker");
  auto id =
      start(sys, {{"throw_on", {4, 6}}}, {{"strategy", "resume"}, {"failedMessage", "dead-letter"}}, 10);
  ASSERT_TRUE(wait_until([&] { return dead(sys) == 2u && handled().unique.size() >= 8; }, long_wait))
      << pool_of(id, sys).dump();

  auto list = reg("GET", "/registry/dlq/" + sys + "/faulty");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(seqs(list.json), (std::vector<std::int64_t>{4, 6})) << list.body;
  for (auto& m : list.json["messages"]) {
    EXPECT_EQ(m["source"], "broker") << m.dump();
    EXPECT_EQ(m["reason"], "rejected");
    EXPECT_EQ(m["attempts"], 1);
    EXPECT_FALSE(m.contains("md5"));
    EXPECT_GT(m["at"].get<std::int64_t>(), 0);
    EXPECT_EQ(m["size"], m["body"].get<std::string>().size());
  }
  // The MQS answers directly too, with the limit it is given.
  auto direct = at_mqs("GET", "/dlq?topic=" + sys + ".faulty&limit=1");
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(direct.json["depth"], 2);
  EXPECT_EQ(seqs(direct.json), (std::vector<std::int64_t>{4}));

  auto one =
      reg("POST", "/registry/dlq/" + sys + "/faulty/purge", json{{"ids", {id_of(list.json, 4)}}}.dump());
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json["purged"], 1);
  EXPECT_EQ(seqs(reg("GET", "/registry/dlq/" + sys + "/faulty").json), (std::vector<std::int64_t>{6}));
  auto rest_of = reg("POST", "/registry/dlq/" + sys + "/faulty/purge");
  ASSERT_EQ(rest_of.status, 200) << rest_of.body;
  EXPECT_EQ(rest_of.json["purged"], 1);
  EXPECT_EQ(dead(sys), 0u);
  EXPECT_EQ(reg("GET", "/registry/dlq/" + sys + "/faulty").json["messages"], json::array());

  // Bad input, answered precisely; the MQS keeps serving.
  auto no_topic = at_mqs("GET", "/dlq");
  EXPECT_EQ(no_topic.status, 400);
  EXPECT_EQ(no_topic.json["error"], "missing query parameter \"topic\" (GET /dlq?topic=<system>.<pool>)");
  auto not_json = at_mqs("POST", "/dlq/replay", "{");
  EXPECT_EQ(not_json.status, 400);
  EXPECT_EQ(not_json.json["error"], "the body is not JSON");
  auto bad_topic = at_mqs("POST", "/dlq/purge", R"({"topic":"a b.c"})");
  EXPECT_EQ(bad_topic.status, 400) << bad_topic.body;
  auto unknown = reg("POST", "/registry/dlq/" + sys + "/faulty/purge", R"({"ids":["nope"]})");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.json["missing"], json::array({"nope"}));
  auto no_pool = reg("GET", "/registry/dlq/" + sys + "/nothing");
  EXPECT_EQ(no_pool.status, 404);
  EXPECT_EQ(no_pool.json["error"],
            "no node runs pool " + sys + "/nothing (GET /registry/status), so its MQS is unknown");
  EXPECT_EQ(at_mqs("GET", "/health").status, 200);
}

}  // namespace
}  // namespace dde::test
