// pool_monitor: rates from the routers' counters between rounds, history, MQS figures, and the
// metrics it exports; metrics_registry's text format.
#include <gtest/gtest.h>

#include "dde/core/metrics.hpp"
#include "pool_monitor.hpp"

namespace dde::registry {
namespace {

using namespace std::chrono_literals;

node_sample node_with_pool(double delivered, double done, double in_flight) {
  node_sample s;
  s.info.id = "42";
  s.info.name = "node-a";
  s.describe = ordered_json::parse(R"({"sys": [{"id": "sys/consumer", "workersCount": 2,
      "messageQueuingSystemServer": "ws://127.0.0.1:42043/mqs", "state": "running",
      "workers": [{"inFlight": 0}, {"inFlight": 0}], "stats": {}}]})");
  auto& pool = (*s.describe)["sys"][0];
  pool["stats"] = {{"delivered", delivered}, {"done", done}};
  pool["workers"][0]["inFlight"] = in_flight;
  return s;
}

TEST(PoolMonitor, ComputesRatesFromTheCountersBetweenTwoRounds) {
  pool_monitor m(3);
  auto t0 = pool_monitor::clock::now();
  m.update(t0, {node_with_pool(100, 90, 1)}, {}, "");
  auto& first = m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"];
  EXPECT_EQ(first["in"], 0) << "no rate from a single round";
  m.update(t0 + 2s, {node_with_pool(300, 250, 3)}, {}, "");
  auto live = m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"];
  EXPECT_DOUBLE_EQ(live["in"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(live["out"].get<double>(), 80);
  EXPECT_EQ(live["inFlight"], 3);
  EXPECT_EQ(live["history"]["out"].size(), 2u);
}

TEST(PoolMonitor, ComputesAProducersSendRateFromItsSentCounter) {
  pool_monitor m;
  auto t0 = pool_monitor::clock::now();
  auto producer = [](double sent) {
    auto s = node_with_pool(0, 0, 0);
    (*s.describe)["sys"][0]["stats"]["sent"] = sent;
    return s;
  };
  m.update(t0, {producer(1000)}, {}, "");
  EXPECT_EQ(m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"]["sent"], 0)
      << "no rate from a single round";
  m.update(t0 + 2s, {producer(1800)}, {}, "");
  auto live = m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"];
  EXPECT_DOUBLE_EQ(live["sent"].get<double>(), 400);
  EXPECT_EQ(live["in"], 0) << "a producer receives nothing";
  EXPECT_EQ(live["history"]["sent"], ordered_json::array({0, 400}));
  m.update(t0 + 3s, {producer(5)}, {}, "");
  EXPECT_EQ(m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"]["sent"], 0)
      << "a sent counter that went back is a restart, not a negative rate";
}

TEST(PoolMonitor, ACounterThatWentBackIsARestartNotANegativeRate) {
  pool_monitor m;
  auto t0 = pool_monitor::clock::now();
  m.update(t0, {node_with_pool(500, 500, 0)}, {}, "");
  m.update(t0 + 1s, {node_with_pool(10, 10, 0)}, {}, "");
  EXPECT_EQ(m.snapshot()["nodes"][0]["systems"][0]["pools"][0]["live"]["out"], 0);
}

TEST(PoolMonitor, KeepsOnlyTheLastSamplesAndAddsTheMqsFigures) {
  pool_monitor m(3);
  auto t0 = pool_monitor::clock::now();
  topic_sample t;
  t.queue_depth = 7;
  t.redelivered = 2;
  for (int i = 0; i < 5; ++i)
    m.update(t0 + i * 1s, {node_with_pool(i * 10.0, i * 10.0, 0)},
             {{"ws://127.0.0.1:42043/mqs sys.consumer", t}}, "");
  auto pool = m.snapshot()["nodes"][0]["systems"][0]["pools"][0];
  EXPECT_EQ(pool["topic"], "sys.consumer");
  EXPECT_EQ(pool["live"]["history"]["t"].size(), 3u);
  EXPECT_EQ(pool["live"]["queueDepth"], 7);
  EXPECT_EQ(pool["live"]["redelivered"], 2);
  EXPECT_EQ(m.snapshot()["nodes"][0]["systems"][0]["state"], "running");
}

TEST(PoolMonitor, ANodeThatDidNotAnswerIsShownUnreachable) {
  pool_monitor m;
  node_sample s;
  s.info.id = "7";
  s.error = "request timed out";
  m.update(pool_monitor::clock::now(), {s}, {}, "");
  auto node = m.snapshot()["nodes"][0];
  EXPECT_EQ(node["health"], "unreachable");
  EXPECT_EQ(node["error"], "request timed out");
}

TEST(PoolMonitor, ExportsPerPoolSeriesLabelledWithNodeAndTopic) {
  metrics_registry r;
  pool_monitor m;
  auto t0 = pool_monitor::clock::now();
  m.update(t0, {node_with_pool(5, 4, 1)}, {}, "");
  m.export_metrics(r);
  auto text = r.render();
  EXPECT_NE(text.find("# TYPE dde_pool_messages_out_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("dde_pool_messages_out_total{node=\"node-a\",pool=\"sys.consumer\"} 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("dde_pool_in_flight{node=\"node-a\",pool=\"sys.consumer\"} 1\n"), std::string::npos)
      << text;
  m.update(t0 + 1s, {}, {}, "");
  m.export_metrics(r);
  EXPECT_EQ(r.render().find("sys.consumer"), std::string::npos) << "a pool that is gone leaves no series";
}

TEST(Metrics, RendersEscapedLabelsAndWholeNumbers) {
  metrics_registry r;
  r.counter("a_total", "A.", {{"x", "q\"b\\n\n"}}).add(3);
  r.gauge("b", "B.").set(0.5);
  EXPECT_EQ(r.render(),
            "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"q\\\"b\\\\n\\n\"} 3\n"
            "# HELP b B.\n# TYPE b gauge\nb 0.5\n");
}

}  // namespace
}  // namespace dde::registry
