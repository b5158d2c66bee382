// Traces on a real broker: one ask followed across two isolate systems on two
// nodes (activators) through their span logs. A requester in system A on node A asks a supplier in
// system B on node B, which replies; each node's isolate systems write spans to their own file
// (DDE_TRACE_LOG, which an activator hands its children). The three spans (A's ask, sent while
// handling nothing, so a root; B handling it; A handling the answer) share one trace id, and each
// names the one before as its parent. A delayed retry is another span of the same trace, with the
// same parent as the attempt that failed.
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

std::vector<nlohmann::json> read_spans(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));  // a line being written is read whole on the next read
  }
  return out;
}

std::optional<nlohmann::json> span_of_kind(const std::filesystem::path& file, const std::string& kind) {
  for (auto& s : read_spans(file))
    if (s["kind"] == kind) return s;
  return std::nullopt;
}

class Traces : public Cluster {};

TEST_F(Traces, OneAskIsFollowedAcrossTwoSystemsOnTwoNodesThroughTheirSpanLogs) {
  auto sys_a = unique_system("tracea"), sys_b = unique_system("traceb");
  auto spans_a = dir / "spans-a.jsonl", spans_b = dir / "spans-b.jsonl";
  auto node_a = start_activator(registry, dir, "trace-a", 0, {},
                                {{"DDE_TRACE_LOG", spans_a.string()}, {"DDE_TRACE_NODE", "trace-a"}});
  auto node_b = start_activator(registry, dir, "trace-b", 0, {},
                                {{"DDE_TRACE_LOG", spans_b.string()}, {"DDE_TRACE_NODE", "trace-b"}});
  auto r =
      deploy_pool(node_id(registry, "trace-b"), sys_b, "supplier", "supplier", nlohmann::json::object(), 1);
  ASSERT_EQ(r.status, 200) << r.body;
  r = deploy_pool(node_id(registry, "trace-a"), sys_a, "requester", "requester",
                  {{"to", sys_b + "/supplier"}, {"count", 1}, {"concurrency", 1}, {"stats_dir", dir}}, 1);
  ASSERT_EQ(r.status, 200) << r.body;

  // Waits for the last hop (A handling the answer) and for B's span, written at B's done().
  std::optional<nlohmann::json> root, asked, answered;
  ASSERT_TRUE(wait_until(
      [&] {
        answered = span_of_kind(spans_a, "reply");
        asked = span_of_kind(spans_b, "receive");
        return answered && asked;
      },
      long_wait))
      << "node A's spans: " << read_spans(spans_a).size() << ", node B's: " << read_spans(spans_b).size();
  root = span_of_kind(spans_a, "send");
  ASSERT_TRUE(root) << "the ask, sent from on_start, is its trace's root";

  EXPECT_FALSE(root->contains("parentSpanId")) << root->dump();
  EXPECT_EQ((*root)["name"], sys_a + "/requester");
  EXPECT_EQ((*root)["node"], "trace-a");

  EXPECT_EQ((*asked)["traceId"], (*root)["traceId"]) << asked->dump();
  EXPECT_EQ((*asked)["parentSpanId"], (*root)["spanId"]) << "B's hop is a child of A's ask";
  EXPECT_EQ((*asked)["messageId"], (*root)["messageId"]) << "the same message, sent and handled";
  EXPECT_EQ((*asked)["name"], sys_b + "/supplier");
  EXPECT_EQ((*asked)["system"], sys_b);
  EXPECT_EQ((*asked)["node"], "trace-b");
  EXPECT_EQ((*asked)["status"], "ok");

  EXPECT_EQ((*answered)["traceId"], (*root)["traceId"]) << answered->dump();
  EXPECT_EQ((*answered)["parentSpanId"], (*asked)["spanId"]) << "the answer is a child of B's hop";
  EXPECT_EQ((*answered)["name"], sys_a + "/requester");
  EXPECT_EQ((*answered)["node"], "trace-a");
  EXPECT_EQ((*answered)["status"], "ok");
  EXPECT_LE((*root)["startUs"].get<std::int64_t>(), (*answered)["endUs"].get<std::int64_t>());
  std::set<std::string> ids{(*root)["spanId"], (*asked)["spanId"], (*answered)["spanId"]};
  EXPECT_EQ(ids.size(), 3u) << "three distinct spans";
}

TEST_F(Traces, ADelayedRetryIsAnotherSpanOfTheSameTraceWithTheSameParent) {
  auto sys = unique_system("traceretry");
  auto spans = dir / "spans.jsonl";
  const std::map<std::string, std::string> env{{"DDE_TRACE_LOG", spans.string()},
                                               {"DDE_TRACE_NODE", "retry-node"}};
  auto faulty = pool(sys, "faulty", "faulty", {{"throw_once_on", {3}}, {"log_dir", dir}});
  faulty["retry"] = {{"delays", {300}}};
  faulty["supervision"] = {{"strategy", "resume"}};
  auto host = start_host(sys, mqs.url(), {faulty}, dir / "host-faulty.log", env);
  auto producer =
      start_host(sys, mqs.url(), {pool(sys, "producer", "producer", {{"to", sys + "/faulty"}, {"count", 5}})},
                 dir / "host-producer.log", env);
  // The failed attempt and the retry: two spans of the pool for one message id.
  std::vector<nlohmann::json> attempts;
  ASSERT_TRUE(wait_until(
      [&] {
        std::map<std::string, std::vector<nlohmann::json>> by_message;
        for (auto& s : read_spans(spans))
          if (s["kind"] == "receive") by_message[s["messageId"].get<std::string>()].push_back(s);
        for (auto& [id, list] : by_message)
          if (list.size() == 2) attempts = list;
        return attempts.size() == 2;
      },
      long_wait))
      << host->log();
  std::optional<nlohmann::json> root;
  for (auto& s : read_spans(spans))
    if (s["kind"] == "send" && s["messageId"] == attempts[0]["messageId"]) root = s;
  ASSERT_TRUE(root) << "the producer's send of that message";
  EXPECT_EQ(attempts[0]["status"], "error") << attempts[0].dump();
  EXPECT_EQ(attempts[1]["status"], "ok") << attempts[1].dump();
  for (auto& a : attempts) {
    EXPECT_EQ(a["traceId"], (*root)["traceId"]) << a.dump();
    EXPECT_EQ(a["parentSpanId"], (*root)["spanId"]) << "the retry kept the message's traceparent";
    EXPECT_EQ(a["name"], sys + "/faulty");
  }
  EXPECT_NE(attempts[0]["spanId"], attempts[1]["spanId"]);
  EXPECT_EQ(producer->stop(), 0);
  EXPECT_EQ(host->stop(), 0) << host->log();
  shared_broker().delete_queue("dde.delay-300." + sys + ".faulty");
}

}  // namespace
}  // namespace dde::test
