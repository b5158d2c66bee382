// Pool rate and maxInFlight: every window of the configured length holds at most N
// message starts, wherever it is placed; throughput stays under the rate + 10% (and well above a
// fraction of it) while work is queued; at most K messages are handled at once.
#include <fstream>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

class Throttle : public Cluster {
 protected:
  void deploy_echo(nlohmann::json extra, nlohmann::json args, int workers) {
    node_ = std::make_unique<activator_process>(node("thr-" + sys));
    id = node_id(registry, "thr-" + sys);
    auto r = deploy_pool(id, sys, "echo", "echo_v1", args, workers, extra);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void burst(int n, int start = 0, const std::string& name = "producer") {
    auto r = deploy(deploy_body(id, mqs.url(), sys + "p", name, "producer",
                                {{"to", sys + "/echo"}, {"count", n}, {"start_seq", start}}));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  rest_answer set_rate(nlohmann::json limits) {
    limits.update({{"bootstrapperId", id}, {"isolateSystemName", sys}, {"isolateName", "echo"}});
    return rest("POST", registry.url() + "/registry/system/rate", limits.dump());
  }
  std::size_t unique_started() {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir)) seen.insert(l.seq);
    return seen.size();
  }
  /// Start times (µs) of every handled message, sorted.
  std::vector<std::int64_t> starts() {
    std::vector<std::int64_t> out;
    for (auto& l : read_echo_logs(dir)) out.push_back(l.time_us);
    std::sort(out.begin(), out.end());
    return out;
  }
  /// Deploys `workers` echo workers with rate `messages` per `per_ms`, sends `n` at once, and checks
  /// that every window of `per_ms` holds at most `messages` starts and that, after the first
  /// window's burst, the rest came at no more than 110% of the rate (and more than 35% of it).
  void expect_rate_held(int messages, int per_ms, int workers, int n) {
    deploy_echo({{"rate", {{"messages", messages}, {"perMs", per_ms}}}}, nlohmann::json::object(), workers);
    burst(n);
    ASSERT_TRUE(wait_until([&] { return unique_started() >= std::size_t(n); }, long_wait));
    auto s = starts();
    // A start is logged by the worker a little after the gate admitted it (the hand-over to its
    // cell, which takes longer on a loaded machine, so the logged starts bunch up). Logged starts that
    // fit in a window shorter by `handed_over_us` were admitted within the whole window, as long as no
    // hand-over took longer.
    constexpr std::int64_t handed_over_us = 50000;
    EXPECT_LE(densest_window(s, std::int64_t(per_ms) * 1000 - handed_over_us), std::size_t(messages));
    double rate = double(s.size() - std::size_t(messages)) / (double(s.back() - s.front()) / 1e6);
    double target = messages * 1000.0 / per_ms;
    // The upper bound is the gate's promise, whatever the load. The lower bound is not: the starts
    // of a window need the messages in the host, and refilling its credits is a round trip through
    // the MQS that a loaded machine stretches (0.48 of 250/s was seen beside two busy loops, ctest
    // -j2 and a build). That the gate admits a start as soon as its window allows is the rate_gate
    // unit tests' (framework_rate_gate_test.cpp); here the floor only catches a pool held back far
    // more than asked (a lost wake-up left to a periodic sweep, say).
    EXPECT_GT(rate, target * 0.35) << rate;
    EXPECT_LT(rate, target * 1.1) << rate;
  }
  std::string sys = unique_system("thr");
  std::string id;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Throttle, ThreePerSecondHoldsInEveryWindowAndKeepsTheRate) { expect_rate_held(3, 1000, 4, 15); }

TEST_F(Throttle, FiftyPer200MsHoldsInEveryWindowAndKeepsTheRate) { expect_rate_held(50, 200, 8, 600); }

TEST_F(Throttle, MaxInFlightHoldsWithSlowMessages) {
  deploy_echo({{"maxInFlight", 2}}, {{"work_ms", 100}}, 6);
  const int n = 20;
  burst(n);
  ASSERT_TRUE(wait_until([&] { return unique_started() >= std::size_t(n); }, long_wait));
  // Ends come from done-*.log; wait for all of them.
  auto ends = [&] {
    std::vector<std::int64_t> out;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().filename().string().rfind("done-", 0) != 0) continue;
      std::ifstream in(e.path());
      std::int64_t seq, t;
      while (in >> seq >> t) out.push_back(t);
    }
    return out;
  };
  ASSERT_TRUE(wait_until([&] { return ends().size() >= starts().size(); }, long_wait));
  std::vector<std::pair<std::int64_t, int>> events;
  for (auto t : starts()) events.emplace_back(t, +1);
  for (auto t : ends()) events.emplace_back(t, -1);
  std::sort(events.begin(), events.end());  // an end and a start at the same µs: the end first
  int now = 0, most = 0;
  for (auto& [t, d] : events) most = std::max(most, now += d);
  EXPECT_LE(most, 2);
  EXPECT_EQ(most, 2) << "six workers, but two at a time";
}

TEST_F(Throttle, TheRateCanBeChangedAtRunTime) {
  deploy_echo(nlohmann::json::object(), nlohmann::json::object(), 4);
  auto r = set_rate({{"rate", {{"messages", 20}, {"perMs", 1000}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  burst(60);
  ASSERT_TRUE(wait_until([&] { return unique_started() >= 60; }, long_wait));
  auto first = starts();
  EXPECT_LE(densest_window(first, 1000000), 20u);
  EXPECT_GT(first.back() - first.front(), 1900000) << "60 messages at 20/s take about 2 s";

  r = set_rate({{"rate", {{"messages", 200}, {"perMs", 1000}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  burst(400, 60, "producer2");
  ASSERT_TRUE(wait_until([&] { return unique_started() >= 460; }, long_wait));
  std::vector<std::int64_t> second;
  for (auto& l : read_echo_logs(dir))
    if (l.seq >= 60) second.push_back(l.time_us);
  std::sort(second.begin(), second.end());
  EXPECT_LE(densest_window(second, 1000000), 200u);
  EXPECT_GT(densest_window(second, 1000000), 20u) << "the new, higher rate took effect";

  auto bad = set_rate({{"rate", {{"messages", 0}, {"perMs", 1000}}}});
  EXPECT_EQ(bad.status, 400) << bad.body;
  auto pools = pools_of(registry, id, sys);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0]["rate"]["messages"], 200) << pools[0].dump();
}

}  // namespace
}  // namespace dde::test
