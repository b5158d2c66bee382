// Canary hot deployment: the verdict on its own (canary_judge), then the router driving a canary with
// its fake clock: a new version on one of four workers, judged at the end of its window, promoted or
// rolled back (and then refused until the file changes), and every message counted under its md5.
#include <gtest/gtest.h>

#include "canary_judge.hpp"
#include "dde/core/metrics.hpp"
#include "router_fixture.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;
using testing::HotSwapTest;

canary_spec spec_of(std::uint64_t min_messages, double max_increase) {
  canary_spec s;
  s.workers = 1;
  s.window = 1000ms;
  s.min_messages = min_messages;
  s.max_increase = max_increase;
  return s;
}

TEST(CanaryJudge, WaitsForTheWindowAndForMinMessages) {
  canary_judge::time_point t0{};
  canary_judge judge(spec_of(3, 0.05), t0, {});
  for (int i = 0; i < 3; ++i) judge.count(true, false);
  EXPECT_EQ(judge.judge(t0 + 999ms), canary_judge::verdict::wait) << "not before the window ends";
  EXPECT_EQ(judge.judge(t0 + 1000ms), canary_judge::verdict::promote);
  canary_judge few(spec_of(3, 0.05), t0, {});
  few.count(true, false);
  few.count(true, false);
  EXPECT_EQ(few.judge(t0 + 5000ms), canary_judge::verdict::wait) << "two messages are not enough";
  EXPECT_EQ(few.describe(t0 + 5000ms)["waitingFor"], "minMessages");
}

TEST(CanaryJudge, RollsBackOnlyWhenTheCanaryFailsMoreThanTheOldVersionByMoreThanTheThreshold) {
  canary_judge::time_point t0{};
  canary_judge judge(spec_of(1, 0.2), t0, {});
  // Old: 1 failure in 10 (10%); canary: 3 in 10 (30%): 20 points more, exactly the threshold.
  for (int i = 0; i < 10; ++i) judge.count(false, i == 0);
  for (int i = 0; i < 10; ++i) judge.count(true, i < 3);
  EXPECT_EQ(judge.judge(t0 + 1s), canary_judge::verdict::promote) << judge.explain();
  judge.count(true, true);  // 4 in 11: 36%
  EXPECT_EQ(judge.judge(t0 + 1s), canary_judge::verdict::roll_back) << judge.explain();
  EXPECT_NE(judge.explain().find("36.4%"), std::string::npos) << judge.explain();
}

TEST(CanaryJudge, WithoutOldMessagesInTheWindowTheOldVersionsEarlierFiguresAreTheBaseline) {
  canary_judge::time_point t0{};
  canary_judge judge(spec_of(2, 0.1), t0, version_counts{5, 5});  // a one-worker pool: the canary has it all
  judge.count(true, true);
  judge.count(true, false);
  EXPECT_EQ(judge.judge(t0 + 1s), canary_judge::verdict::promote) << "50% against the 50% before it";
  EXPECT_EQ(judge.describe(t0 + 1s)["baselineBeforeCanary"], true);
}

class CanaryTest : public HotSwapTest {
 protected:
  /// Four workers of echo_v1 (which never fails), polled each second; a canary of one worker judged
  /// after 10 s and `min_messages`. args.throw_on lists every seq: a faulty version fails all of them.
  std::shared_ptr<router> start_canary_pool(const std::string& name, int min_messages = 4,
                                            std::size_t workers = 4) {
    replace_with(std::string(DDE_WORKER_DIR) + "/libecho_v1.so");
    std::vector<int> every_seq(200);
    for (int i = 0; i < 200; ++i) every_seq[std::size_t(i)] = i;
    auto r = start_pool(workers,
                        {{"isolateName", name},
                         {"uri", plugin.string()},
                         {"hotDeployment", true},
                         {"hotDeploymentIntervalMs", 1000},
                         {"canary",
                          {{"workers", 1},
                           {"windowMs", 10000},
                           {"minMessages", min_messages},
                           {"maxFailureRateIncrease", 0.1}}}},
                        every_seq);
    old_md5 = describe(*r)["pluginMd5"].get<std::string>();
    return r;
  }
  /// Installs the plugin at `file` and lets the next poll find it: the canary starts.
  std::string new_version(router& r, const std::string& file) {
    replace_with(std::string(DDE_WORKER_DIR) + "/" + file);
    advance(1000ms);
    return describe(r)["hotDeploy"]["canary"]["md5"].get<std::string>();
  }
  /// Messages from outside DDE, seqs [from, to), each settled before the next (round robin over 4).
  void deliver_range(int from, int to) {
    for (int seq = from; seq < to; ++seq) deliver(std::uint64_t(100 + seq), seq, false, true);
  }
  static double version_count(const std::string& pool, const std::string& md5, const std::string& result) {
    return metrics_registry::process()
        .counter("dde_host_version_messages_total", "", {{"pool", pool}, {"md5", md5}, {"result", result}})
        .value();
  }
  static double canaries(const std::string& pool, const std::string& outcome) {
    return metrics_registry::process()
        .counter("dde_host_canaries_total", "", {{"pool", pool}, {"outcome", outcome}})
        .value();
  }
  std::size_t requeued() const {
    std::size_t n = 0;
    for (auto& [tag, requeue] : link->nacks) n += requeue;
    return n;
  }
  std::string old_md5;
};

TEST_F(CanaryTest, AGoodVersionRunsOnOneWorkerForItsWindowThenTakesTheWholePool) {
  auto r = start_canary_pool("canary-good");
  auto md5 = new_version(*r, "libecho_v2.so");
  auto d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], old_md5) << "the old version still runs the pool";
  EXPECT_EQ(d["hotDeploy"]["state"], "canary");
  EXPECT_EQ(d["hotDeploy"]["canary"]["state"], "running");
  EXPECT_EQ(d["hotDeploy"]["canary"]["oldMd5"], old_md5);
  EXPECT_EQ(d["hotDeploy"]["canary"]["windowEndsInMs"], 10000);
  ASSERT_EQ(d["hotDeploy"]["canary"]["workers"].size(), 1u);
  int marked = 0;
  for (auto& w : d["workers"]) marked += w.value("canary", false);
  EXPECT_EQ(marked, 1) << d["workers"].dump();
  deliver_range(0, 16);
  EXPECT_EQ(link->acks.size(), 16u);
  d = describe(*r);
  EXPECT_EQ(d["hotDeploy"]["canary"]["canary"]["handled"], 4) << "one message in four went to the canary";
  EXPECT_EQ(d["hotDeploy"]["canary"]["baseline"]["handled"], 12);
  EXPECT_EQ(version_count("unit.canary-good", md5, "handled"), 4);
  EXPECT_EQ(version_count("unit.canary-good", old_md5, "handled"), 12);
  advance(9999ms);  // the window began with the swap-in, at the poll
  EXPECT_EQ(describe(*r)["pluginMd5"], old_md5) << "not before the window ends";
  advance(1ms);
  d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], md5) << d.dump();
  EXPECT_EQ(d["hotDeploy"]["state"], "running");
  EXPECT_EQ(d["hotDeploy"]["swaps"], 1);
  EXPECT_FALSE(d["hotDeploy"].contains("canary"));
  EXPECT_EQ(d["hotDeploy"]["lastCanary"]["outcome"], "promoted");
  EXPECT_EQ(d["hotDeploy"]["lastCanary"]["md5"], md5);
  EXPECT_EQ(canaries("unit.canary-good", "promoted"), 1);
  deliver_range(16, 24);
  EXPECT_EQ(version_count("unit.canary-good", md5, "handled"), 4 + 8) << "every worker runs it now";
}

TEST_F(CanaryTest, AFailingVersionIsRolledBackRefusedAndNotTriedAgainUntilTheFileChanges) {
  auto r = start_canary_pool("canary-bad");
  auto md5 = new_version(*r, "libfaulty.so");
  deliver_range(0, 16);
  EXPECT_EQ(link->acks.size(), 12u);
  EXPECT_EQ(requeued(), 4u) << "what the canary failed goes back to the queue, none dead-lettered";
  EXPECT_EQ(describe(*r)["governance"]["deadLettered"], 0);
  advance(10000ms);
  auto d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], old_md5) << d.dump();
  EXPECT_EQ(d["hotDeploy"]["state"], "refused");
  EXPECT_EQ(d["hotDeploy"]["refusedMd5"], md5);
  EXPECT_NE(d["hotDeploy"]["error"].get<std::string>().find("canary rolled back: canary failure rate 100.0%"),
            std::string::npos)
      << d["hotDeploy"]["error"];
  EXPECT_EQ(d["hotDeploy"]["swaps"], 0);
  EXPECT_EQ(d["hotDeploy"]["lastCanary"]["outcome"], "rolledBack");
  EXPECT_EQ(d["hotDeploy"]["lastCanary"]["canary"]["failed"], 4);
  EXPECT_EQ(d["poolState"], "running") << "the canary's failures did not spend the pool's restarts";
  for (auto& w : d["workers"]) EXPECT_FALSE(w.contains("canary"));
  EXPECT_EQ(version_count("unit.canary-bad", md5, "failed"), 4);
  EXPECT_EQ(canaries("unit.canary-bad", "rolled_back"), 1);
  advance(5000ms);  // five more polls of the same refused file
  d = describe(*r);
  EXPECT_FALSE(d["hotDeploy"].contains("canary")) << "a refused version is not tried again";
  EXPECT_EQ(d["hotDeploy"]["state"], "refused");
  deliver_range(16, 24);
  EXPECT_EQ(link->acks.size(), 12u + 8u) << "the old version handles everything again";
  EXPECT_EQ(version_count("unit.canary-bad", md5, "failed"), 4);
  auto next = new_version(*r, "libecho_v2.so");
  EXPECT_NE(next, md5) << "a changed file is a new canary";
  EXPECT_EQ(describe(*r)["hotDeploy"]["state"], "canary");
}

TEST_F(CanaryTest, AfterTheWindowTheVerdictWaitsForMinMessagesAndComesWithTheLastOne) {
  auto r = start_canary_pool("canary-min", 3);
  auto md5 = new_version(*r, "libecho_v2.so");
  deliver_range(0, 4);  // one for the canary
  advance(20000ms);
  auto d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], old_md5) << "one message is not enough to judge";
  EXPECT_EQ(d["hotDeploy"]["canary"]["waitingFor"], "minMessages");
  EXPECT_EQ(d["hotDeploy"]["canary"]["windowEndsInMs"], 0);
  deliver_range(4, 8);
  EXPECT_EQ(describe(*r)["pluginMd5"], old_md5) << "two are not either";
  deliver_range(8, 12);
  EXPECT_EQ(describe(*r)["pluginMd5"], md5)
      << "the third canary message brings the verdict, with no more time passing";
}

TEST_F(CanaryTest, AOneWorkerPoolTriesItOnItsOnlyWorkerAgainstTheOldVersionsFiguresBefore) {
  auto r = start_canary_pool("canary-one", 3, 1);
  deliver_range(0, 5);  // the old version's figures: 5 handled, none failed
  auto md5 = new_version(*r, "libfaulty.so");
  auto d = describe(*r);
  EXPECT_EQ(d["hotDeploy"]["canary"]["workers"].size(), 1u);
  deliver_range(5, 8);
  EXPECT_EQ(requeued(), 3u);
  d = describe(*r);
  EXPECT_EQ(d["hotDeploy"]["canary"]["baselineBeforeCanary"], true);
  EXPECT_EQ(d["hotDeploy"]["canary"]["baseline"]["handled"], 5);
  advance(10000ms);
  d = describe(*r);
  EXPECT_EQ(d["pluginMd5"], old_md5) << d.dump();
  EXPECT_EQ(d["hotDeploy"]["refusedMd5"], md5);
  deliver_range(8, 10);
  EXPECT_EQ(link->acks.size(), 5u + 2u) << "its only worker runs the old version again";
}

TEST_F(CanaryTest, RestartIsRefusedWhileACanaryRunsAndSaysWhy) {
  auto r = start_canary_pool("canary-restart");
  auto md5 = new_version(*r, "libecho_v2.so");
  std::optional<op_result> restarted;
  r->restart_workers([&](op_result done) { restarted = std::move(done); });
  settle();
  ASSERT_TRUE(restarted && !*restarted);
  EXPECT_NE(restarted->error().find("is trying plugin md5 " + md5 + " as a canary"), std::string::npos)
      << restarted->error();
}

}  // namespace
}  // namespace dde::host
