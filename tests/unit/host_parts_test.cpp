// The router's parts as plain logic, on explicit time points: supervision decisions, the starvation
// guard's PINGs and verdicts, pause announcements, and the manual clock the router tests drive.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "ask_tracker.hpp"
#include "asks.hpp"
#include "autoscaler.hpp"
#include "canary.hpp"
#include "held_messages.hpp"
#include "manual_clock.hpp"
#include "pause_governor.hpp"
#include "starvation_guard.hpp"
#include "supervisor.hpp"
#include "worker_watch.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

TEST(AskTracker, AReplyEndsItsAskOnceWithItsRoundTripAndItsPool) {
  ask_tracker asks(60s);
  clock::time_point t0{1h};
  asks.sent("a", "s.supplier", t0);
  asks.sent("a", "s.other", t0 + 5ms);  // the same ask forwarded on: still the first
  auto ended = asks.answered("a", t0 + 20ms);
  ASSERT_TRUE(ended);
  EXPECT_EQ(ended->pool, "s.supplier");
  EXPECT_DOUBLE_EQ(ended->seconds, 0.02);
  EXPECT_FALSE(asks.answered("a", t0 + 30ms)) << "a second reply ends nothing";
  EXPECT_FALSE(asks.answered("never-asked", t0));
  EXPECT_EQ(asks.pending(), 0u);
  EXPECT_FALSE(asks.next_deadline());
}

TEST(AskTracker, AsksTimeOutOldestFirstAndTooManyPendingEndTheOldest) {
  ask_tracker asks(60s, 2);
  clock::time_point t0{1h};
  asks.sent("a", "s.x", t0);
  asks.sent("b", "s.y", t0 + 10s);
  EXPECT_EQ(asks.next_deadline(), t0 + 60s);
  EXPECT_TRUE(asks.expire(t0 + 59s).empty());
  auto ended = asks.expire(t0 + 60s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].pool, "s.x");
  EXPECT_DOUBLE_EQ(ended[0].seconds, 60);
  asks.sent("c", "s.z", t0 + 61s);
  asks.sent("d", "s.z", t0 + 62s);  // three pending, two allowed: "b" goes
  EXPECT_TRUE(asks.over_limit());
  ended = asks.expire(t0 + 62s);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].pool, "s.y");
  EXPECT_EQ(asks.pending(), 2u);
  EXPECT_EQ(asks.next_deadline(), t0 + 121s);
}

TEST(Asks, ObservesARoundTripWhenItsReplyComesAndATimeoutWhenNoneCame) {
  testing::manual_time t;
  asks rounds(*t.clock, t.strand, "parts.asker", 60s);
  auto& registry = metrics_registry::process();
  auto& own = registry.histogram("dde_host_ask_seconds", "", latency_buckets(), {{"pool", "parts.asker"}});
  EXPECT_EQ(own.cumulative().back(), 0u) << "the pool's own series exists before its first ask";
  auto& seconds =
      registry.histogram("dde_host_ask_seconds", "", latency_buckets(), {{"pool", "parts.asked"}});
  auto& timeouts = registry.counter("dde_host_ask_timeouts_total", "", {{"pool", "parts.asked"}});
  rounds.sent("answered", "parts.asked", t.clock->now());
  rounds.sent("silent", "parts.asked", t.clock->now());
  t.advance(250ms);
  rounds.replied("answered");
  EXPECT_EQ(seconds.cumulative().back(), 1u);
  EXPECT_DOUBLE_EQ(seconds.sum(), 0.25);
  EXPECT_EQ(rounds.pending(), 1u);
  t.advance(60s);
  EXPECT_EQ(timeouts.value(), 1) << "the unanswered ask times out 60 s after it went";
  EXPECT_EQ(seconds.cumulative().back(), 2u);
  EXPECT_EQ(rounds.pending(), 0u);
  EXPECT_EQ(t.clock->pending(), 0u) << "nothing pending: no timer armed";
}

/// A pool for the autoscaler: workers that grow and shrink at once, and depth answers the test gives.
struct scaled_pool : scaling_target {
  std::size_t workers = 1, idle = 0;
  bool changing = false;
  int scaled_calls = 0;
  std::vector<std::function<void(std::uint64_t, std::string)>> asked;
  std::size_t active_workers() const override { return workers; }
  std::size_t idle_workers() const override { return idle; }
  bool slots_changing() const override { return changing; }
  void grow(std::size_t n) override { workers += n; }
  void shrink(std::size_t n) override { workers -= std::min(n, idle); }
  void ask_depth(std::function<void(std::uint64_t, std::string)> answer) override { asked.push_back(answer); }
  void scaled() override { ++scaled_calls; }
};

pool_spec scaled_spec() {
  pool_spec spec;
  spec.system = "parts";
  spec.isolate = "scaled";
  spec.workers_paths = {"localhost"};
  spec.scale.min = 1;
  spec.scale.max = 4;
  spec.scale.target_backlog = 10;
  spec.scale.sample = 500ms;
  spec.scale.cooldown = 1000ms;
  return spec;
}

TEST(Autoscaler, SamplesTheDepthEachPeriodAndGrowsAfterTwoSamplesAboveTheTarget) {
  testing::manual_time t;
  scaled_pool pool;
  autoscaler scaling(*t.clock, t.strand, scaled_spec(), pool);
  scaling.start();
  auto sample = [&](std::uint64_t backlog) {
    t.advance(500ms);
    ASSERT_FALSE(pool.asked.empty());
    auto answer = pool.asked.back();
    pool.asked.clear();
    answer(backlog, "");
  };
  sample(1000);
  EXPECT_EQ(pool.workers, 1u) << "one sample above the target is not enough";
  sample(1000);
  EXPECT_EQ(pool.workers, 2u) << "up to double per step";
  EXPECT_EQ(pool.scaled_calls, 1);
  nlohmann::json d;
  scaling.describe(d, pool.workers);
  EXPECT_EQ(d["workersCount"], 2);
  EXPECT_EQ(d["workersPaths"], nlohmann::json::array({"localhost"})) << "as deployed";
  EXPECT_EQ(d["scaling"]["scaleUps"], 1);
  EXPECT_EQ(d["scaling"]["backlog"], 1000);
  EXPECT_EQ(d["scaling"]["changes"][0]["reason"].get<std::string>().empty(), false);
  pool.changing = true;
  sample(1000);
  sample(1000);
  EXPECT_EQ(pool.workers, 2u) << "not while its slots change";
  scaling.stop();
  t.advance(5s);
  EXPECT_TRUE(pool.asked.empty()) << "stopped: no more samples";
}

TEST(Autoscaler, AFailedSampleIsShownAndChangesNothing) {
  testing::manual_time t;
  scaled_pool pool;
  autoscaler scaling(*t.clock, t.strand, scaled_spec(), pool);
  scaling.start();
  scaling.on_depth(1000, "queue not found");
  scaling.on_depth(1000, "queue not found");
  EXPECT_EQ(pool.workers, 1u);
  nlohmann::json d;
  scaling.describe(d, pool.workers);
  EXPECT_EQ(d["scaling"]["error"], "queue not found");
  scaling.on_depth(0, "");
  scaling.describe(d, pool.workers);
  EXPECT_FALSE(d["scaling"].contains("error")) << "a sample read again clears it";
}

TEST(Asks, AStoppedPoolArmsNoTimer) {
  testing::manual_time t;
  asks rounds(*t.clock, t.strand, "parts.stopping", 60s);
  rounds.sent("a", "parts.elsewhere", t.clock->now());
  EXPECT_EQ(t.clock->pending(), 1u);
  rounds.stop();
  rounds.sent("b", "parts.elsewhere", t.clock->now());
  EXPECT_EQ(t.clock->pending(), 0u);
  EXPECT_EQ(rounds.pending(), 2u);
}
using time_point = std::chrono::steady_clock::time_point;
const time_point t0{std::chrono::hours(10)};

supervision_spec restart_spec(int max_restarts, std::chrono::milliseconds within,
                              std::chrono::milliseconds backoff) {
  supervision_spec s;
  s.kind = strategy::restart;
  s.max_restarts = max_restarts;
  s.within = within;
  s.backoff = backoff;
  return s;
}

TEST(Supervisor, RestartsUntilTheLimitWithinTheWindowThenStopsThePool) {
  supervisor sup(restart_spec(3, 1000ms, 0ms));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(sup.on_failure(t0 + i * 10ms).what, supervisor::action::restart_worker);
  EXPECT_EQ(sup.on_failure(t0 + 40ms).what, supervisor::action::stop_pool);
  EXPECT_EQ(sup.stopped_state("boom"), "stopped: 3 restarts within 1000 ms; last failure: boom");
}

TEST(PoisonFilter, AMessageIsPoisonedOnceItFailedTheLimitAndThenForgotten) {
  poison_filter f(3);
  f.failed("m1", "first");
  f.failed("m1", "second");
  EXPECT_FALSE(f.poisoned("m1")) << "two failures of three";
  f.failed("m1", "third");
  auto v = f.poisoned("m1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->failures, 3);
  EXPECT_EQ(v->last_failure, "third");
  EXPECT_FALSE(f.poisoned("m1")) << "dead-lettered once: forgotten";
  EXPECT_EQ(f.size(), 0u);
}

TEST(PoisonFilter, ADoneMessageIsForgottenAndWithoutAnIdOrALimitNothingIsCounted) {
  poison_filter f(1);
  f.failed("m1", "boom");
  f.done("m1");
  EXPECT_FALSE(f.poisoned("m1"));
  f.failed("", "no id");
  EXPECT_EQ(f.size(), 0u);
  poison_filter off(0);
  off.failed("m1", "boom");
  EXPECT_FALSE(off.poisoned("m1"));
}

TEST(PoisonFilter, RemembersAtMostItsCapacityForgettingTheOldest) {
  poison_filter f(1, 2);
  f.failed("a", "x");
  f.failed("b", "x");
  f.failed("c", "x");
  EXPECT_EQ(f.size(), 2u);
  EXPECT_FALSE(f.poisoned("a")) << "the oldest was forgotten";
  EXPECT_TRUE(f.poisoned("b"));
  EXPECT_TRUE(f.poisoned("c"));
  for (int i = 0; i < 100; ++i) {
    f.failed("d" + std::to_string(i), "x");
    f.done("d" + std::to_string(i));
  }
  f.failed("e", "x");
  EXPECT_EQ(f.size(), 1u);
  EXPECT_TRUE(f.poisoned("e"));
}

TEST(Supervisor, FailuresOlderThanTheWindowNoLongerCount) {
  supervisor sup(restart_spec(2, 1000ms, 0ms));
  EXPECT_EQ(sup.on_failure(t0).what, supervisor::action::restart_worker);
  EXPECT_EQ(sup.on_failure(t0 + 500ms).what, supervisor::action::restart_worker);
  EXPECT_EQ(sup.on_failure(t0 + 1001ms).what, supervisor::action::restart_worker)
      << "the first one left the window";
  EXPECT_EQ(sup.recent(), 2u);
  EXPECT_EQ(sup.on_failure(t0 + 1002ms).what, supervisor::action::stop_pool);
}

TEST(Supervisor, TheBackoffDoublesPerRecentRestartUpToThirtySeconds) {
  supervisor sup(restart_spec(20, 3600000ms, 100ms));
  std::vector<long long> waits;
  for (int i = 0; i < 11; ++i) waits.push_back(sup.on_failure(t0 + i * 1ms).backoff.count());
  EXPECT_EQ(waits,
            (std::vector<long long>{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000}));
}

TEST(Supervisor, EachStrategyHasItsAction) {
  supervision_spec s;
  s.kind = strategy::resume;
  EXPECT_EQ(supervisor(s).on_failure(t0).what, supervisor::action::resume);
  s.kind = strategy::stop;
  EXPECT_EQ(supervisor(s).on_failure(t0).what, supervisor::action::stop_worker);
  s.kind = strategy::escalate;
  s.max_restarts = 1;
  supervisor esc(s);
  EXPECT_EQ(esc.on_failure(t0).what, supervisor::action::restart_pool);
  EXPECT_EQ(esc.on_failure(t0 + 1ms).what, supervisor::action::stop_pool)
      << "escalations count against the limit";
  s.kind = strategy::resume;
  supervisor resume(s);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(resume.on_failure(t0).what, supervisor::action::resume);
}

TEST(StarvationGuard, PingsAWorkerThatHoldsMessagesAndWentQuiet) {
  starvation_guard g(1000ms, 500ms);
  EXPECT_EQ(g.period(), 500ms);
  g.resize(2, t0);
  auto holding = [](std::size_t slot) { return slot == 0; };
  EXPECT_TRUE(g.scan(t0 + 999ms, holding).empty()) << "not quiet long enough";
  auto todo = g.scan(t0 + 1000ms, holding);
  ASSERT_EQ(todo.size(), 1u) << "slot 1 holds nothing and is not watched";
  EXPECT_EQ(todo[0].what, starvation_guard::action::kind::ping);
  EXPECT_EQ(todo[0].slot, 0u);
  EXPECT_TRUE(g.scan(t0 + 1200ms, holding).empty()) << "one PING at a time";
  EXPECT_EQ(g.on_pong(0, todo[0].ping_id, false, 0ms, t0 + 1300ms), starvation_guard::verdict::answered);
  EXPECT_EQ(g.on_pong(0, todo[0].ping_id, false, 0ms, t0 + 1300ms), starvation_guard::verdict::stale)
      << "a PONG counts once";
  EXPECT_TRUE(g.scan(t0 + 2299ms, holding).empty()) << "the PONG counts as activity";
  EXPECT_EQ(g.scan(t0 + 2300ms, holding).size(), 1u);
}

TEST(StarvationGuard, NoPongInTimeReplacesTheWorker) {
  starvation_guard g(1000ms, 500ms);
  g.resize(1, t0);
  auto holding = [](std::size_t) { return true; };
  auto ping = g.scan(t0 + 1000ms, holding);
  ASSERT_EQ(ping.size(), 1u);
  EXPECT_TRUE(g.scan(t0 + 1500ms, holding).empty()) << "ping_after + pong_timeout not passed yet";
  auto todo = g.scan(t0 + 1501ms, holding);
  ASSERT_EQ(todo.size(), 1u);
  EXPECT_EQ(todo[0].what, starvation_guard::action::kind::replace);
  EXPECT_EQ(g.on_pong(0, ping[0].ping_id, false, 0ms, t0 + 1600ms), starvation_guard::verdict::stale)
      << "the replaced instance's late PONG";
}

TEST(StarvationGuard, APongWhileTheMessageIsHeldTooLongIsAFailure) {
  starvation_guard g(1000ms, 5000ms);
  g.resize(1, t0);
  auto ping = g.scan(t0 + 1000ms, [](std::size_t) { return true; });
  ASSERT_EQ(ping.size(), 1u);
  EXPECT_EQ(g.on_pong(0, ping[0].ping_id, true, 1000ms, t0 + 1001ms), starvation_guard::verdict::too_slow);
}

TEST(StarvationGuard, ActivityAndForgetResetTheWatch) {
  starvation_guard g(100ms, 100ms);
  g.resize(1, t0);
  auto holding = [](std::size_t) { return true; };
  g.active(0, t0 + 90ms);
  EXPECT_TRUE(g.scan(t0 + 150ms, holding).empty());
  auto ping = g.scan(t0 + 190ms, holding);
  ASSERT_EQ(ping.size(), 1u);
  g.forget(0);  // the slot got a fresh instance
  EXPECT_EQ(g.on_pong(0, ping[0].ping_id, false, 0ms, t0 + 200ms), starvation_guard::verdict::stale);
  g.active(3, t0);  // a slot the autoscaler added
  auto todo = g.scan(t0 + 300ms, [](std::size_t slot) { return slot == 0 || slot == 3; });
  ASSERT_EQ(todo.size(), 2u) << "slots 1 and 2 hold nothing";
  EXPECT_EQ(todo[1].slot, 3u);
}

/// A pool for the worker watch: slots that hold messages as the test says, PINGs it answers itself.
struct watched_slots : watched_pool {
  std::vector<bool> held;
  std::vector<std::pair<std::size_t, std::function<void(bool, std::chrono::milliseconds)>>> pings;
  std::vector<std::size_t> replaced;
  std::vector<std::string> failed;
  int answers = 0;
  bool holding(std::size_t slot) const override { return held[slot]; }
  void ping(std::size_t slot, std::function<void(bool, std::chrono::milliseconds)> pong) override {
    pings.emplace_back(slot, std::move(pong));
  }
  void replace_stuck(std::size_t slot) override { replaced.push_back(slot); }
  void fail_current(std::size_t, std::string why) override { failed.push_back(std::move(why)); }
  void answered() override { ++answers; }
  std::size_t slot_count() const override { return held.size(); }
};

TEST(WorkerWatch, PingsAQuietWorkerThatHoldsAMessageAndReplacesItWithoutAPong) {
  testing::manual_time t;
  watched_slots pool;
  pool.held = {false, false};
  worker_watch watch(*t.clock, t.strand, 1000ms, 500ms, pool);
  watch.resize(2);
  watch.start();
  t.advance(1000ms);
  EXPECT_EQ(t.clock->pending(), 0u) << "nothing held, no PING out: the watch sleeps";
  pool.held[1] = true;
  watch.handed(1, true);
  EXPECT_EQ(t.clock->pending(), 1u) << "a hand-over wakes it";
  for (int i = 0; i < 8 && pool.pings.empty(); ++i) t.advance(250ms);
  ASSERT_EQ(pool.pings.size(), 1u);
  EXPECT_EQ(pool.pings[0].first, 1u);
  pool.pings[0].second(false, 0ms);  // a PONG from a worker that is not busy: alive
  EXPECT_EQ(pool.answers, 1);
  pool.pings.clear();
  for (int i = 0; i < 8 && pool.pings.empty(); ++i) t.advance(250ms);
  ASSERT_EQ(pool.pings.size(), 1u) << "still quiet and holding: PINGed again";
  for (int i = 0; i < 8 && pool.replaced.empty(); ++i) t.advance(250ms);
  EXPECT_EQ(pool.replaced, std::vector<std::size_t>{1}) << "no PONG within the timeout";
  watch.stop();
  EXPECT_EQ(t.clock->pending(), 0u);
}

TEST(WorkerWatch, APongFromAWorkerBusyTooLongFailsItsMessage) {
  testing::manual_time t;
  watched_slots pool;
  pool.held = {true};
  worker_watch watch(*t.clock, t.strand, 1000ms, 500ms, pool);
  watch.resize(1);
  watch.start();
  for (int i = 0; i < 8 && pool.pings.empty(); ++i) {
    t.advance(250ms);
  }
  ASSERT_EQ(pool.pings.size(), 1u);
  pool.pings[0].second(true, 1500ms);
  ASSERT_EQ(pool.failed.size(), 1u);
  EXPECT_NE(pool.failed[0].find("starvation guard"), std::string::npos) << pool.failed[0];
  EXPECT_EQ(pool.answers, 0);
}

/// A pool for a canary: records the swaps it is asked for and refusals; each swap succeeds.
struct trial_pool : canary_pool {
  std::shared_ptr<worker_plugin> old_version;
  std::vector<std::pair<step, std::vector<bool>>> swaps;
  std::vector<std::string> refused;
  bool swapping = false;
  std::vector<std::function<void()>> posted;
  result<bool> swap_slots(std::shared_ptr<worker_plugin>, step s, std::vector<bool> only) override {
    swaps.emplace_back(s, std::move(only));
    return true;
  }
  bool may_judge() const override { return !swapping; }
  std::shared_ptr<worker_plugin> running() const override { return old_version; }
  void trial_began() override {}
  void refuse(const std::string& md5, const std::string&) override { refused.push_back(md5); }
  void later(std::function<void()> fn) override { posted.push_back(std::move(fn)); }
};

struct CanaryTrial : ::testing::Test {
  testing::manual_time t;
  trial_pool pool;
  pool_spec spec = [] {
    pool_spec s;
    s.system = "parts";
    s.isolate = "canary";
    s.canary.workers = 1;
    s.canary.window = 1000ms;
    s.canary.min_messages = 2;
    return s;
  }();
  version_meter versions{"parts.canary"};
  canary trial{*t.clock, t.strand, spec, versions, pool};
  std::shared_ptr<worker_plugin> next =
      worker_plugin::load(std::string(DDE_WORKER_DIR) + "/libecho_v2.so").value();

  CanaryTrial() {
    pool.old_version = worker_plugin::load(std::string(DDE_WORKER_DIR) + "/libecho_v1.so").value();
  }
  void window_passes() { t.advance(1000ms); }
};

TEST_F(CanaryTrial, TriesTheNewVersionOnItsShareAndPromotesItWhenItFailsNoMoreThanTheOld) {
  ASSERT_TRUE(trial.begin(next, {0, 2}, 3).value());
  ASSERT_EQ(pool.swaps.size(), 1u);
  EXPECT_EQ(pool.swaps[0].first, canary_pool::step::try_it);
  EXPECT_EQ(pool.swaps[0].second, (std::vector<bool>{true, false, false}))
      << "one worker, the first eligible";
  EXPECT_TRUE(trial.chosen(0));
  EXPECT_FALSE(trial.on(0)) << "not judged before its slots run it";
  trial.started();
  EXPECT_TRUE(trial.on(0));
  trial.count(true, false);
  trial.count(false, false);
  window_passes();
  EXPECT_EQ(pool.swaps.size(), 1u) << "one canary message: below minMessages, it waits";
  trial.count(true, false);
  ASSERT_EQ(pool.posted.size(), 1u) << "past the window, each canary message asks for a verdict";
  pool.posted[0]();
  ASSERT_EQ(pool.swaps.size(), 2u);
  EXPECT_EQ(pool.swaps[1].first, canary_pool::step::promote);
  EXPECT_EQ(pool.swaps[1].second, (std::vector<bool>{false, true, true})) << "the other slots";
  trial.ended(true, pool.old_version->object().md5());
  EXPECT_EQ(trial.last()["outcome"], "promoted");
  EXPECT_EQ(trial.last()["md5"], next->object().md5());
  EXPECT_FALSE(trial.trying());
  EXPECT_TRUE(pool.refused.empty());
}

TEST_F(CanaryTrial, ACanaryThatFailsMoreIsRolledBackAndItsVersionRefused) {
  ASSERT_TRUE(trial.begin(next, {1}, 2).value());
  trial.started();
  trial.count(true, true);
  trial.count(true, true);
  trial.count(false, false);
  EXPECT_NE(trial.busy_text().find(next->object().md5()), std::string::npos) << trial.busy_text();
  pool.swapping = true;
  window_passes();
  EXPECT_EQ(pool.swaps.size(), 1u) << "no verdict in the middle of a swap";
  pool.swapping = false;
  trial.judge();
  ASSERT_EQ(pool.swaps.size(), 2u);
  EXPECT_EQ(pool.swaps[1].first, canary_pool::step::roll_back);
  EXPECT_EQ(pool.swaps[1].second, (std::vector<bool>{false, true})) << "the canary's slots go back";
  trial.ended(false, pool.old_version->object().md5());
  EXPECT_EQ(trial.last()["outcome"], "rolledBack");
  EXPECT_EQ(pool.refused, std::vector<std::string>{next->object().md5()});
}

TEST_F(CanaryTrial, NothingEligibleMeansNoCanary) {
  auto begun = trial.begin(next, {}, 2);
  ASSERT_TRUE(begun);
  EXPECT_FALSE(begun.value());
  EXPECT_TRUE(pool.swaps.empty());
  EXPECT_FALSE(trial.trying());
}

held_message numbered(int n, const std::string& key) {
  held_message w;
  w.tag = std::uint64_t(n);
  w.msg.body_ = nlohmann::json{{"shop", key}, {"n", n}};
  return w;
}

TEST(HeldMessages, AFullSubPoolHoldsItsKeyAndItsOldestGoesFirstOnceOneOfItsKeyEnds) {
  sub_pool_spec spec;
  spec.key = "shop";
  spec.default_capacity = 1;
  held_messages held(spec);
  ASSERT_TRUE(held.sub_pools());
  auto a1 = numbered(1, "a"), a2 = numbered(2, "a"), a3 = numbered(3, "a"), b1 = numbered(4, "b");
  EXPECT_EQ(held.sub_key(a1.msg), "a");
  EXPECT_FALSE(held.wait_for_sub_pool("a", a1)) << "room in its sub-pool";
  held.sub_pool_started("a");
  EXPECT_TRUE(held.wait_for_sub_pool("a", a2));
  EXPECT_TRUE(held.wait_for_sub_pool("a", a3));
  EXPECT_FALSE(held.wait_for_sub_pool("b", b1)) << "another key goes on";
  EXPECT_EQ(held.sub_held(), 2u);
  EXPECT_TRUE(held.empty());
  auto d = held.describe({"a"});
  EXPECT_EQ(d["a"]["inFlight"], 1);
  EXPECT_EQ(d["a"]["held"], 2);
  EXPECT_EQ(d["a"]["capacity"], 1);
  held.push(std::move(b1));
  held.sub_pool_finished("a");
  EXPECT_EQ(held.sub_held(), 1u);
  EXPECT_EQ(held.pop().tag, 2u) << "the oldest of its key, at the front of the queue";
  EXPECT_EQ(held.pop().tag, 4u);
  EXPECT_TRUE(held.empty());
}

TEST(HeldMessages, GivesBackEverythingItHolds) {
  sub_pool_spec spec;
  spec.key = "shop";
  spec.default_capacity = 1;
  held_messages held(spec);
  held.sub_pool_started("a");
  auto a2 = numbered(2, "a");
  ASSERT_TRUE(held.wait_for_sub_pool("a", a2));
  held.push(numbered(5, "c"));
  held.push(numbered(6, "c"), true);
  std::vector<std::uint64_t> given;
  held.give_back([&](const held_message& w) { given.push_back(w.tag); });
  EXPECT_EQ(given, (std::vector<std::uint64_t>{6, 5, 2}));
  EXPECT_TRUE(held.empty());
  EXPECT_EQ(held.sub_held(), 0u);
}

TEST(PauseGovernor, AnnouncesEachExtensionOnceAndCountsOwnAndRemotePauses) {
  pause_governor gov;
  EXPECT_TRUE(gov.extend(t0 + 1000ms, "quota", true));
  EXPECT_FALSE(gov.extend(t0 + 1000ms, "quota again", true)) << "a second worker hit by the same pause";
  EXPECT_FALSE(gov.extend(t0 + 1005ms, "quota", true)) << "within 5 ms of what was announced";
  EXPECT_EQ(gov.reason(), "quota");
  EXPECT_TRUE(gov.extend(t0 + 2000ms, "from a replica", false));
  EXPECT_EQ(gov.reason(), "from a replica");
  EXPECT_EQ(gov.pauses(), 1u);
  EXPECT_EQ(gov.remote_pauses(), 1u);
}

TEST(PauseGovernor, RecognisesItsOwnAnnouncementComingBack) {
  EXPECT_TRUE(pause_governor::is_own("mqs-1/abc-123", "abc-123"));
  EXPECT_FALSE(pause_governor::is_own("mqs-1/xabc-123", "abc-123"));
  EXPECT_FALSE(pause_governor::is_own("mqs-1/other", "abc-123"));
  EXPECT_FALSE(pause_governor::is_own("abc", "abc-123"));
}

TEST(ManualClock, RunsDueTimersInDeadlineOrderAndNeverACancelledOne) {
  boost::asio::io_context io;
  auto strand = boost::asio::make_strand(io);
  auto c = std::make_shared<testing::manual_clock>();
  auto start = c->now();
  auto a = c->make_timer(strand), b = c->make_timer(strand), gone = c->make_timer(strand);
  std::vector<std::string> ran;
  a->after(200ms, [&] { ran.push_back("a"); });
  b->after(100ms, [&] { ran.push_back("b"); });
  gone->after(50ms, [&] { ran.push_back("gone"); });
  gone->cancel();
  c->advance(150ms);
  io.run();
  EXPECT_EQ(ran, std::vector<std::string>{"b"});
  EXPECT_EQ(c->now() - start, 150ms);
  a->after(10ms, [&] { ran.push_back("a again"); });  // re-armed: the old deadline is gone
  c->advance(10ms);
  io.restart();
  io.run();
  EXPECT_EQ(ran, (std::vector<std::string>{"b", "a again"}));
  b->after(5ms, [&] { ran.push_back("b late"); });
  c->advance(5ms);  // due and posted...
  b->cancel();      // ...then cancelled before it ran
  io.restart();
  io.run();
  EXPECT_EQ(ran.size(), 2u) << "a cancelled timer does not run even once posted";
  EXPECT_EQ(c->pending(), 0u);
}

TEST(RealClock, AReArmedTimerRunsOnlyTheNewCallAndACancelledOneNothing) {
  boost::asio::io_context io;
  auto strand = boost::asio::make_strand(io);
  auto t = real_clock()->make_timer(strand), gone = real_clock()->make_timer(strand);
  int old_runs = 0, new_runs = 0, cancelled_runs = 0;
  t->after(0ms, [&] { ++old_runs; });
  t->after(1ms, [&] { ++new_runs; });
  gone->after(0ms, [&] { ++cancelled_runs; });
  gone->cancel();
  io.run();
  EXPECT_EQ(old_runs, 0);
  EXPECT_EQ(new_runs, 1);
  EXPECT_EQ(cancelled_runs, 0);
}

}  // namespace
}  // namespace dde::host
