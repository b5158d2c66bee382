// The router's parts that own its workers' slots, its deliveries in flight and how a message ends at
// the broker, each without a router: a ledger, instances that only answer to their name, a fake MQS
// link that records acks, nacks and enqueues.
#include <gtest/gtest.h>

#include <algorithm>

#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "deliveries.hpp"
#include "router_fixture.hpp"
#include "settlement.hpp"
#include "worker_slots.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

/// An instance that counts the kills asked of it.
struct named_cell : cell {
  explicit named_cell(std::string n) : name(std::move(n)) {}
  std::string name;
  int kills = 0;
  result<bool> create() override { return true; }
  void start() override {}
  void post_message(message&&, std::uint64_t) override {}
  void post_reply(message) override {}
  void kill(std::function<void()> done) override {
    ++kills;
    done();
  }
  std::string id() const override { return name; }
  void supervise(directive, std::chrono::milliseconds) override {}
  void ping(std::function<void(bool, std::chrono::milliseconds)>) override {}
  void fail_current(std::string) override {}
};

struct WorkerSlots : ::testing::Test {
  pool_ledger ledger{router_kind::round_robin, 4, 1};
  worker_slots slots{ledger};
  std::vector<std::shared_ptr<named_cell>> cells;

  void add_local(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      cells.push_back(std::make_shared<named_cell>("w" + std::to_string(cells.size())));
      slots.add(cells.back(), "localhost");
    }
  }
};

TEST_F(WorkerSlots, AKilledSlotClosesDrainsWhatItHoldsAndOnlyThenStopsItsInstance) {
  add_local(2);
  ledger.assign(0);
  slots.begin_kill(0);
  EXPECT_FALSE(ledger.open(0)) << "a slot being killed gets nothing more";
  EXPECT_EQ(slots.state(0), "killing");
  EXPECT_EQ(slots.drained(0), nullptr) << "it still holds a message";
  EXPECT_EQ(slots.active(), 1u);

  ledger.finish(0);
  auto c = slots.drained(0);
  ASSERT_EQ(c, cells[0]);
  EXPECT_EQ(slots.drained(0), nullptr) << "its instance is stopped once";
  EXPECT_EQ(slots.state(0), "killing");
  EXPECT_TRUE(slots.stopped(0, c));
  EXPECT_EQ(slots.state(0), "killed");
  EXPECT_FALSE(ledger.alive(0));
  EXPECT_EQ(slots.drained(1), nullptr) << "a slot nobody kills is never drained";
}

TEST_F(WorkerSlots, AnInstanceThatStopsAfterARestartReplacedItLeavesTheFreshOneRunning) {
  add_local(1);
  slots.begin_kill(0);
  auto old = slots.drained(0);
  ASSERT_NE(old, nullptr);
  auto fresh = std::make_shared<named_cell>("w0-fresh");
  slots.install(0, fresh);
  EXPECT_FALSE(slots.stopped(0, old)) << "the old instance's end is not the fresh one's";
  EXPECT_EQ(slots.state(0), "running");
  EXPECT_TRUE(ledger.alive(0));
  EXPECT_TRUE(ledger.open(0));
  EXPECT_EQ(ledger.snapshot()[0].id, "w0-fresh");
}

TEST_F(WorkerSlots, AProxySlotIsDownUntilItsRemoteWorkerIsUpAndStaysKilledOnceStopped) {
  slots.add(std::make_shared<named_cell>("remote"), "10.0.0.7:7000");
  EXPECT_EQ(slots.state(0), "down");
  EXPECT_TRUE(slots.up(0, "remote-1"));
  EXPECT_EQ(slots.state(0), "running");
  EXPECT_EQ(ledger.snapshot()[0].id, "remote-1");

  slots.down(0, "link dropped");
  EXPECT_EQ(slots.describe([](std::size_t) { return false; })[0]["error"], "link dropped");
  EXPECT_TRUE(slots.up(0, "remote-2"));
  EXPECT_FALSE(slots.describe([](std::size_t) { return false; })[0].contains("error"));

  slots.begin_kill(0);
  auto c = slots.drained(0);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(slots.up(0, "remote-3")) << "a respawn does not bring back a slot being killed";
  EXPECT_TRUE(slots.stopped(0, c));
  EXPECT_FALSE(slots.up(0, "remote-3"));
  EXPECT_EQ(slots.state(0), "killed");
}

TEST_F(WorkerSlots, ScalingDownParksIdleSlotsNewestFirstAndScalingUpRevivesThemWithTheirCounts) {
  add_local(4);
  ledger.assign(3);          // busy
  slots.down(1, "crashed");  // down
  slots.count_done(0);
  EXPECT_EQ(slots.idle(), 2u);

  auto parked = slots.park_idle(3);
  EXPECT_EQ(parked, (std::vector<std::size_t>{2, 0})) << "idle ones only, newest first";
  EXPECT_TRUE(slots.parked(2));
  EXPECT_EQ(slots.active(), 2u);
  EXPECT_TRUE(slots.parked_and_gone().empty()) << "their instances have not stopped yet";
  for (auto i : parked) ASSERT_TRUE(slots.stopped(i, slots.drained(i)));
  EXPECT_EQ(slots.state(0), "parked");
  EXPECT_EQ(slots.parked_and_gone(), (std::vector<std::size_t>{0, 2}));

  slots.place(0, std::make_shared<named_cell>("w0-back"));
  slots.place(4, std::make_shared<named_cell>("w4"));
  EXPECT_EQ(slots.size(), 5u);
  EXPECT_EQ(slots.state(0), "running");
  EXPECT_FALSE(slots.parked(0));
  EXPECT_TRUE(ledger.open(0));
  auto workers = slots.describe([](std::size_t index) { return index == 4; });
  EXPECT_EQ(workers[0]["id"], "w0-back");
  EXPECT_EQ(workers[0]["done"], 1) << "a revived slot keeps its count";
  EXPECT_EQ(workers[3]["inFlight"], 1);
  EXPECT_EQ(workers[4]["canary"], true);
  EXPECT_EQ(workers[2]["state"], "parked");
}

TEST_F(WorkerSlots, KillEachStopsEveryInstance) {
  add_local(3);
  int gone = 0;
  slots.kill_each([&] { ++gone; });
  EXPECT_EQ(gone, 3);
  for (auto& c : cells) EXPECT_EQ(c->kills, 1);
}

TEST(DeliveryTable, EachWorkerFinishesADeliveryOnceAndLateReportsFindNothing) {
  delivery_table table;
  auto [first, d] = table.open();
  d.pending = {0, 2};
  d.sub_key = "k1";
  auto [second, e] = table.open();
  e.pending = {2};
  EXPECT_NE(first, second);
  auto held = table.held_by(2);
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held, (std::vector<std::uint64_t>{first, second}));
  EXPECT_EQ(table.held_by(first, 1), nullptr);
  EXPECT_EQ(table.held_by(first, 0), &d);

  EXPECT_EQ(table.release(first, 0), &d);
  EXPECT_EQ(table.release(first, 0), nullptr) << "a second report of the same worker";
  EXPECT_EQ(d.pending, std::vector<std::size_t>{2});
  EXPECT_EQ(table.sub_keys().size(), 2u);
  table.erase(first);
  EXPECT_EQ(table.find(first), nullptr);
  EXPECT_EQ(table.release(first, 2), nullptr) << "a report after the delivery ended";
  EXPECT_EQ(table.held_by(2), std::vector<std::uint64_t>{second});
}

struct Settlement : ::testing::Test {
  testing::fake_link link;
  pool_spec spec = make(nlohmann::json::object());
  pool_figures figures{"unit.settlement-test"};
  governance gov{spec, link, figures};
  poison_filter poison{2};
  bool pool_gone = false;
  settlement settle{spec,
                    link,
                    figures,
                    gov,
                    poison,
                    [this](settlement::confirm_fn fn) -> settlement::confirm_fn {
                      return [this, fn = std::move(fn)](bool confirmed) {
                        if (!pool_gone) fn(confirmed);
                      };
                    },
                    [] { return std::string("md5-of-v2"); }};

  static pool_spec make(nlohmann::json extra) {
    nlohmann::json body = {{"isolateSystemName", "unit"},
                           {"isolateName", "settle"},
                           {"uri", "/nowhere/libx.so"},
                           {"workersPaths", {"localhost"}}};
    body.update(extra);
    auto s = parse_pool_spec(body);
    EXPECT_TRUE(s) << s.error();
    return s.value();
  }
  static delivery finished(std::uint64_t tag, bool failed) {
    delivery d;
    d.generation = 7;
    d.tag = tag;
    d.failed = failed;
    return d;
  }
  /// A delivery a worker failed with `failure`, its `earlier_failures`+1-th failure, with its retry copy.
  static delivery failed_for_retry(std::uint64_t tag, const std::string& failure, int earlier_failures) {
    auto d = finished(tag, true);
    d.retry_copy = std::make_shared<const message>(a_message("m1"));
    d.failure = failure;
    d.earlier_failures = earlier_failures;
    return d;
  }
  static message a_message(const std::string& id) {
    return to_message(decode_envelope(R"({"id":")" + id + R"(","from":"unit/src","body":{"n":1}})"), false);
  }
};

TEST_F(Settlement, AHandledMessageIsAckedAndAFailedOneGoesBackToItsQueue) {
  settle.settle(finished(1, false));
  settle.settle(finished(2, true));
  EXPECT_EQ(link.acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{7, 1}}));
  EXPECT_EQ(link.nacks, (std::vector<std::pair<std::uint64_t, bool>>{{2, true}}));
  EXPECT_EQ(figures.counts().acked, 1u);
}

TEST_F(Settlement, ADeadLetterPoolHasTheBrokerDeadLetterAFailedMessageButNotACanarysFailure) {
  spec.supervision.dead_letter = true;
  settle.settle(finished(1, true));
  auto canary = finished(2, true);
  canary.canary_failed = true;
  settle.settle(canary);
  EXPECT_EQ(link.nacks, (std::vector<std::pair<std::uint64_t, bool>>{{1, false}, {2, true}}));
  EXPECT_EQ(figures.counts().dead_lettered, 1u);
}

TEST_F(Settlement, AtMostOnceMessagesHaveNothingToSettle) {
  spec.mode = delivery_mode::at_most_once;
  settle.settle(finished(1, false));
  settle.settle(finished(2, true));
  settle.give_back(7, 3);
  EXPECT_TRUE(link.acks.empty());
  EXPECT_TRUE(link.nacks.empty());
}

TEST_F(Settlement, AFailedMessageWaitsInItsDelayQueueAndIsAckedOnlyOnceTheBrokerHasTheCopy) {
  spec.retry.delays = {100ms, 2000ms};
  settle.settle(failed_for_retry(1, "timeout", 1));
  ASSERT_EQ(link.held.size(), 1u);
  EXPECT_EQ(link.held[0].topic, delay_topic(spec.addr().topic(), 2000))
      << "its second failure: the second delay";
  EXPECT_TRUE(link.acks.empty()) << "not before the copy is confirmed";
  link.held[0].settled(true);
  EXPECT_EQ(link.acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{7, 1}}));
  EXPECT_EQ(figures.counts().delayed, 1u);

  settle.settle(failed_for_retry(2, "timeout", 0));
  link.held[1].settled(false);
  EXPECT_EQ(link.nacks, (std::vector<std::pair<std::uint64_t, bool>>{{2, true}}))
      << "refused: back to its queue";

  settle.settle(failed_for_retry(3, "timeout", 0));
  pool_gone = true;
  link.held[2].settled(true);
  EXPECT_EQ(link.acks.size(), 1u) << "a pool gone by the confirm settles nothing";
}

TEST_F(Settlement, AMessageWhoseDelaysAreSpentIsDeadLetteredWithTheVersionThatFailedIt) {
  spec.retry.delays = {100ms};
  settle.settle(failed_for_retry(1, "bad input", 1));
  ASSERT_EQ(link.held.size(), 1u);
  EXPECT_EQ(link.held[0].topic, dead_letter_topic(spec.addr().topic()));
  auto e = decode_envelope(link.held[0].body);
  EXPECT_EQ(e.dead_letter["attempts"], 2);
  EXPECT_EQ(e.dead_letter["md5"], "md5-of-v2");
  EXPECT_NE(e.dead_letter["reason"].get<std::string>().find("last failure: bad input"), std::string::npos);
  link.held[0].settled(true);
  EXPECT_EQ(link.acks.size(), 1u);
}

TEST_F(Settlement, ARedeliveredMessageThatFailedTooOftenIsDeadLetteredAndAcked) {
  auto m = a_message("poison-1");
  EXPECT_FALSE(settle.dead_letter_poison(7, 1, m)) << "never failed";
  poison.failed("poison-1", "boom");
  EXPECT_FALSE(settle.dead_letter_poison(7, 2, m)) << "once is below the limit of 2";
  poison.failed("poison-1", "boom again");
  EXPECT_TRUE(settle.dead_letter_poison(7, 3, m));
  EXPECT_EQ(link.acks, (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{7, 3}}));
  ASSERT_EQ(link.enqueued.size(), 1u);
  EXPECT_EQ(link.enqueued[0].first, dead_letter_topic(spec.addr().topic()));
  EXPECT_NE(link.enqueued[0].second.find("boom again"), std::string::npos);
}

}  // namespace
}  // namespace dde::host
