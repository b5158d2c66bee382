// Autoscaling by queue depth, on a real deployment: a backlog of 50,000 messages scales a
// pool from 1 worker towards max, and it shrinks back to min once the queue is drained; the bounds
// hold throughout and no message is lost; the broker consumers of the pool's queue follow its workers.
#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

class Autoscale : public Cluster {
 protected:
  void SetUp() override {
    Cluster::SetUp();
    node_ = std::make_unique<activator_process>(node("as-" + sys));
    id = node_id(registry, "as-" + sys);
  }
  /// The pool's entry in GET /registry/system/{id} (null while it is not listed).
  nlohmann::json pool() {
    for (auto& p : pools_of(registry, id, sys))
      if (p.value("id", "") == sys + "/work") return p;
    return nullptr;
  }
  std::string sys = unique_system("as");
  std::string id;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Autoscale, ABacklogScalesThePoolTowardsMaxAndItShrinksBackToMinOnceDrained) {
  const int n = 50000;
  const std::size_t max = 8;
  // Each message takes 2 ms (a timer): one worker drains about 400 a second, eight about 3,000.
  auto r = deploy_pool(id, sys, "work", "consumer", {{"work_ms", 2}}, 1,
                       {{"credits", 4},
                        {"scale",
                         {{"min", 1},
                          {"max", max},
                          {"targetBacklogPerWorker", 100},
                          {"cooldownMs", 3000},
                          {"sampleMs", 500}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  r = deploy(deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/work"}, {"count", n}}));
  ASSERT_EQ(r.status, 200) << r.body;

  std::size_t most = 0;
  std::uint32_t most_consumers = 0;  // of the pool's queue, at the broker
  nlohmann::json last;
  auto drained_and_back_to_min = [&] {
    auto p = pool();
    if (p.is_null()) return false;
    last = p;
    auto workers = p["scaling"].value("workers", std::size_t(0));
    most = std::max(most, workers);
    most_consumers = std::max(most_consumers, shared_broker().queue_consumers(sys + ".work").value_or(0));
    EXPECT_LE(workers, max);
    EXPECT_GE(workers, 1u);
    return workers == 1 && read_seq_logs(dir).unique.size() >= std::size_t(n);
  };
  ASSERT_TRUE(wait_until(drained_and_back_to_min, long_wait, 250ms)) << last.dump();
  auto scaling = last["scaling"];
  EXPECT_EQ(scaling.value("peak", 0), int(max)) << scaling.dump();
  EXPECT_GE(scaling.value("scaleUps", 0), 3) << "1 -> 2 -> 4 -> 8: at most double per step";
  EXPECT_GE(scaling.value("scaleDowns", 0), 1);
  for (auto& change : scaling["changes"]) {
    EXPECT_GE(change.value("to", 0), 1) << change.dump();
    EXPECT_LE(change.value("to", 0), int(max)) << change.dump();
    EXPECT_FALSE(change.value("reason", "").empty());
  }
  EXPECT_EQ(last.value("workersCount", 0), 1);
  // The host tells the MQS its workers with each pull: a broker consumer each, so the MQS's prefetch
  // (16) is per worker, as for raw AMQP consumers (one, whatever the pool, before).
  EXPECT_GE(most_consumers, 4u);
  EXPECT_EQ(last["scale"].value("max", 0), int(max));
  auto seqs = read_seq_logs(dir);
  EXPECT_TRUE(seqs.missing(n).empty()) << seqs.missing(n).size() << " message(s) lost";
}

}  // namespace
}  // namespace dde::test
