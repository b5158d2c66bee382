// The worker cell without a router, a process or a broker: a real cell running the `scripted` test
// plugin (each message says what the worker does) on an io_context the test drives, and an owner
// that records everything the cell tells it. One message at a time in order; a throw holds the
// mailbox until the owner's directive (resume, restart, stop); kill gives back what the worker held;
// timers and when_writable callbacks of a replaced instance never run on its successor; backoff and
// rate_limited end the message as rate limited; send, ask, reply and forward build the right
// envelopes; a first-reply race the owner says is lost drops the reply.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>

#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/runtime/plugin_loader.hpp"
#include "dde/runtime/rate_gate.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::runtime {
namespace {

using namespace std::chrono_literals;

struct sent {
  std::string topic;
  delivery_mode mode;
  envelope e;
};

/// Records what the cell tells its owner. `timeline` has one line per call, in order: "receive T"
/// / "reply T" (the worker got the message tagged T), "start", "kill", "done D", "failed D: what",
/// "crashed D: what", "up", "limited D Nms: reason", "send TOPIC".
class recording_owner final : public cell_owner {
 public:
  void worker_done(std::size_t, std::uint64_t delivery_id) override {
    tell("done " + std::to_string(delivery_id));
  }
  void worker_failed(std::size_t, std::uint64_t delivery_id, std::string what, std::string) override {
    tell("failed " + std::to_string(delivery_id) + ": " + what);
  }
  void worker_up(std::size_t, std::string id) override {
    tell("up");
    up_ids.push_back(std::move(id));
  }
  void worker_crashed(std::size_t, std::uint64_t delivery_id, std::string what) override {
    tell("crashed " + std::to_string(delivery_id) + ": " + what);
  }
  void worker_rate_limited(std::size_t, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                           std::string reason, message m) override {
    tell("limited " + std::to_string(delivery_id) + " " + std::to_string(delay.count()) + "ms: " + reason);
    limited_messages.push_back(std::move(m));
  }
  void enqueue(std::string topic, delivery_mode mode, const envelope& e) override {
    if (e.to == "probe/events") {
      auto what = e.body["event"].get<std::string>();
      if (what == "receive" || what == "reply") what += " " + e.body["tag"].dump();
      tell(what);
      worker_ids.push_back(e.body["worker"].get<std::string>());
      return;
    }
    tell("send " + topic);
    sends.push_back({std::move(topic), mode, e});
  }
  /// When `line` was first told, for tests on delays that must not depend on how fast the machine
  /// runs the test.
  std::chrono::steady_clock::time_point time_of(const std::string& line) const {
    auto it = std::find(timeline.begin(), timeline.end(), line);
    EXPECT_NE(it, timeline.end()) << "never told \"" << line << "\"";
    return it == timeline.end() ? std::chrono::steady_clock::time_point::max() : times[it - timeline.begin()];
  }
  void tell(std::string line) {
    timeline.push_back(std::move(line));
    times.push_back(std::chrono::steady_clock::now());
  }
  bool claim_reply(const std::string& message_id) override { return !lost_races.count(message_id); }
  void when_writable(std::function<void()> fn) override { writable_waiters.push_back(std::move(fn)); }
  const std::string& instance() const override { return instance_; }

  std::vector<std::string> timeline;
  std::vector<std::chrono::steady_clock::time_point> times;  ///< when each timeline line was told
  std::vector<std::string> worker_ids;                       ///< the worker id of each probe event
  std::vector<std::string> up_ids;
  std::vector<sent> sends;
  std::vector<message> limited_messages;
  std::set<std::string> lost_races;
  std::vector<std::function<void()>> writable_waiters;

 private:
  std::string instance_ = "4f6c2b1e-0000-4000-8000-000000000007";
};

class WorkerCell : public ::testing::Test {
 protected:
  std::shared_ptr<worker_cell> make_cell(nlohmann::json args = nlohmann::json::object(),
                                         std::string mode = "at-least-once") {
    auto spec = parse_pool_spec({{"isolateSystemName", "unit"},
                                 {"isolateName", "pool"},
                                 {"uri", "/scripted.so"},
                                 {"deliveryMode", mode},
                                 {"args", args}});
    EXPECT_TRUE(spec) << spec.error();
    auto plugin = worker_plugin::load(std::string(DDE_WORKER_DIR) + "/libtest_scripted.so");
    EXPECT_TRUE(plugin) << plugin.error();
    return std::make_shared<worker_cell>(io, owner, std::make_shared<pool_spec>(spec.value()), plugin.value(),
                                         0);
  }

  /// A cell whose worker was created and started.
  std::shared_ptr<worker_cell> started_cell(nlohmann::json args = nlohmann::json::object()) {
    auto c = make_cell(std::move(args));
    auto created = c->create();
    EXPECT_TRUE(created) << (created ? "" : created.error());
    c->start();
    settle();
    EXPECT_EQ(take(), (lines{"start"}));
    return c;
  }

  /// A started cell holding message 1 (delivery 11), which asked other/service, after the answer
  /// (tag 100) came with `steps` for the worker.
  std::shared_ptr<worker_cell> answer_held_ask(nlohmann::json steps) {
    auto c = started_cell();
    c->post_message(msg(1, {{{"ask", "other/service"}}, "hold"}), 11);
    settle();
    take();
    envelope answer;
    answer.id = "r1";
    answer.from = "other/service";
    answer.in_reply_to = owner->sends[0].e.id;
    answer.to_worker = c->id();
    answer.body = {{"tag", 100}, {"steps", std::move(steps)}};
    c->post_reply(to_message(answer, false));
    settle();
    return c;
  }

  /// A started cell whose worker threw on message 1 (delivery 11) while `waiting` more (2, 3, ...,
  /// deliveries 12, 13, ...) waited behind it: its mailbox is held until the test's directive.
  std::shared_ptr<worker_cell> crashed_with_waiting(int waiting) {
    auto c = started_cell();
    c->post_message(msg(1, {"throw"}), 11);
    for (int tag = 2; tag < 2 + waiting; ++tag) c->post_message(msg(tag, {"done"}), 10 + tag);
    settle();
    EXPECT_EQ(take(), (lines{"receive 1", "crashed 11: on_receive threw: thrown as asked"}));
    return c;
  }

  static message msg(int tag, nlohmann::json steps, std::string from = "src/pool") {
    envelope e;
    e.id = "m" + std::to_string(tag);
    e.from = std::move(from);
    e.to = "unit/pool";
    e.body = {{"tag", tag}, {"steps", std::move(steps)}};
    return to_message(std::move(e), false);
  }

  /// Runs every ready handler until none is left.
  void settle() {
    for (int round = 0; round < 1000; ++round) {
      io.restart();
      if (io.poll() == 0) return;
    }
    FAIL() << "the io_context never went idle";
  }
  /// Runs until `line` is in the timeline (timers: a real clock, waited for, not slept on).
  void run_until_line(const std::string& line) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    auto seen = [&] {
      return std::find(owner->timeline.begin(), owner->timeline.end(), line) != owner->timeline.end();
    };
    while (!seen()) {
      if (std::chrono::steady_clock::now() > deadline) return ADD_FAILURE() << "never saw \"" << line << "\"";
      io.restart();
      io.run_one_for(100ms);
    }
    settle();
  }

  using lines = std::vector<std::string>;
  lines take() {
    auto out = std::move(owner->timeline);
    owner->timeline.clear();
    owner->times.clear();
    return out;
  }

  boost::asio::io_context io;
  std::shared_ptr<recording_owner> owner = std::make_shared<recording_owner>();
};

TEST_F(WorkerCell, HandlesOneMessageAtATimeInTheOrderTheyCame) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"writable", {"done"}}}}), 11);
  c->post_message(msg(2, {"done"}), 12);
  c->post_message(msg(3, {"done"}), 13);
  settle();
  // The first holds the worker until its callback (when the owner's socket is writable, which the test
  // says): the others wait in the mailbox.
  EXPECT_EQ(take(), (lines{"receive 1"}));
  ASSERT_EQ(owner->writable_waiters.size(), 1u);
  owner->writable_waiters[0]();
  run_until_line("done 13");
  EXPECT_EQ(take(), (lines{"done 11", "receive 2", "done 12", "receive 3", "done 13"}));
}

TEST_F(WorkerCell, DoneTwiceOrOutsideAMessageChangesNothing) {
  auto c = started_cell();
  c->post_message(msg(1, {"done", "done"}), 11);
  settle();
  EXPECT_EQ(take(), (lines{"receive 1", "done 11"}));
}

TEST_F(WorkerCell, AThrowHoldsTheMailboxUntilResumedOnTheSameInstance) {
  auto c = crashed_with_waiting(1);
  auto first = c->id();
  c->supervise(directive::resume, 0ms);
  settle();
  EXPECT_EQ(take(), (lines{"receive 2", "done 12"}));
  EXPECT_EQ(c->id(), first);
}

TEST_F(WorkerCell, RestartReplacesTheInstanceWhichThenTakesTheMailbox) {
  auto c = crashed_with_waiting(1);
  auto first = c->id();
  auto asked = std::chrono::steady_clock::now();
  c->supervise(directive::restart, 5ms);
  run_until_line("done 12");
  EXPECT_GE(owner->time_of("kill"), asked + 5ms) << "not before its delay";
  EXPECT_EQ(take(), (lines{"kill", "up", "start", "receive 2", "done 12"}));
  ASSERT_EQ(owner->up_ids.size(), 1u);
  EXPECT_NE(owner->up_ids[0], first);
  EXPECT_EQ(c->id(), owner->up_ids[0]);
  // "kill" came from the old instance, the rest from the new one.
  ASSERT_EQ(owner->worker_ids.size(), 5u);  // start, receive 1, then kill, start, receive 2
  EXPECT_EQ(owner->worker_ids[2], first);
  EXPECT_EQ(owner->worker_ids[3], c->id());
  EXPECT_EQ(owner->worker_ids[4], c->id());
}

TEST_F(WorkerCell, StopGivesBackWhatWaitedAndTakesNothingMore) {
  auto c = crashed_with_waiting(2);
  c->supervise(directive::stop, 0ms);
  settle();
  EXPECT_EQ(take(), (lines{"kill", "failed 12: stopped by its supervisor",
                           "failed 13: stopped by its supervisor", "failed 0: stopped by its supervisor"}));
  c->post_message(msg(4, {"done"}), 14);
  settle();
  EXPECT_EQ(take(), (lines{"failed 14: worker stopped"}));
}

TEST_F(WorkerCell, KillRunsBeforeKillAndGivesBackTheMessageHeldAndThoseQueued) {
  auto c = started_cell();
  c->post_message(msg(1, {"hold"}), 11);
  c->post_message(msg(2, {"done"}), 12);
  settle();
  EXPECT_EQ(take(), (lines{"receive 1"}));
  bool killed = false;
  c->kill([&] { killed = true; });
  settle();
  EXPECT_TRUE(killed);
  EXPECT_EQ(take(), (lines{"kill", "failed 11: worker stopped", "failed 12: worker stopped"}));
}

TEST_F(WorkerCell, ATimerOrWritableCallbackOfAReplacedInstanceNeverRunsOnItsSuccessor) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"later", 5}, {"steps", {{{"send", "late/timer"}}}}},
                          {{"writable", {{{"send", "late/writable"}}}}},
                          "throw"}),
                  11);
  settle();
  c->supervise(directive::restart, 0ms);
  settle();
  // The successor's own timer, due after the old one: when it ran, the old one had its chance.
  c->post_message(msg(2, {{{"later", 30}, {"steps", {"done"}}}}), 12);
  for (auto& fn : owner->writable_waiters) fn();
  run_until_line("done 12");
  for (auto& s : owner->sends) ADD_FAILURE() << "a dead instance's callback sent to " << s.topic;
  auto seen = take();
  EXPECT_NE(std::find(seen.begin(), seen.end(), "receive 2"), seen.end());
}

TEST_F(WorkerCell, ACallbackDueWhileACrashedInstanceAwaitsItsSupervisorRunsOnlyIfItResumes) {
  // Found under load: a timer that came due between the crash and the directive ran on the crashed
  // instance. Here the owner says when the socket is writable, so the callback comes due exactly then.
  auto crash_with_callback = [&](int tag) {
    auto c = started_cell();
    c->post_message(msg(tag, {{{"writable", {{{"send", "held/writable"}}}}}, "throw"}), 10 + tag);
    settle();
    EXPECT_EQ(take(), (lines{"receive " + std::to_string(tag),
                             "crashed " + std::to_string(10 + tag) + ": on_receive threw: thrown as asked"}));
    auto waiters = std::move(owner->writable_waiters);
    owner->writable_waiters.clear();
    for (auto& fn : waiters) fn();
    settle();
    EXPECT_TRUE(take().empty()) << "nothing runs while the crashed instance waits for its supervisor";
    return c;
  };
  auto resumed = crash_with_callback(1);
  resumed->supervise(directive::resume, 0ms);
  settle();
  EXPECT_EQ(take(), (lines{"send held.writable"}));

  auto restarted = crash_with_callback(2);
  restarted->supervise(directive::restart, 0ms);
  settle();
  EXPECT_EQ(take(), (lines{"kill", "up", "start"})) << "a restart drops what the old instance held";
}

TEST_F(WorkerCell, BackoffAndRateLimitedEndTheMessageAsRateLimitedAndTheNextOneRuns) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"backoff", 40}}}), 11);
  c->post_message(msg(2, {"rate_limited"}), 12);
  c->post_message(msg(3, {"done"}), 13);
  settle();
  EXPECT_EQ(take(), (lines{"receive 1", "limited 11 40ms: backed off as asked", "receive 2",
                           "limited 12 20ms: limited as asked", "receive 3", "done 13"}));
  // The owner gets the message back to try it again.
  ASSERT_EQ(owner->limited_messages.size(), 2u);
  EXPECT_EQ(owner->limited_messages[0].id(), "m1");
  EXPECT_EQ(owner->limited_messages[1].body()["tag"], 2);
}

TEST_F(WorkerCell, ABackoffPausesThePoolsGateSoTheNextMessageWaitsForIt) {
  auto c = make_cell();
  auto gate = std::make_shared<rate_gate>(0, 1000ms, 0);
  c->set_gate(gate);
  ASSERT_TRUE(c->create());
  c->start();
  settle();
  take();
  auto before = rate_gate::clock::now();
  c->post_message(msg(1, {{{"backoff", 30}}}), 11);
  c->post_message(msg(2, {"done"}), 12);
  settle();
  EXPECT_GE(gate->paused_until(), before + 30ms);
  run_until_line("done 12");
  EXPECT_GE(owner->time_of("receive 2"), before + 30ms) << "message 2 started before the pause ended";
  EXPECT_EQ(take(), (lines{"receive 1", "limited 11 30ms: backed off as asked", "receive 2", "done 12"}));
}

TEST_F(WorkerCell, SendAfterGoesToTheTargetsDelayQueueAtLeastOnce) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"send_after", 1500}, {"to", "other/sink"}}, "done"}), 11);
  settle();
  EXPECT_EQ(take(), (lines{"receive 1", "send dde.delay-1500.other.sink", "done 11"}));
  ASSERT_EQ(owner->sends.size(), 1u);
  EXPECT_EQ(owner->sends[0].mode, delivery_mode::at_least_once)
      << "a delay queue is durable, whatever the pool";
  EXPECT_EQ(owner->sends[0].e.to, "other/sink") << "where it goes when the delay passed";
  EXPECT_EQ(owner->sends[0].e.body["from_step"], "send_after");
  // A delay out of range, or a bad address, is the worker's error: the message fails.
  c->post_message(msg(2, {{{"send_after", 0}, {"to", "other/sink"}}, "done"}), 12);
  settle();
  c->supervise(directive::resume, 0ms);
  c->post_message(msg(3, {{{"send_after", 10}, {"to", "nowhere"}}, "done"}), 13);
  settle();
  auto seen = take();
  ASSERT_EQ(seen.size(), 4u) << ::testing::PrintToString(seen);
  EXPECT_EQ(seen[1],
            "crashed 12: on_receive threw: send_after: the delay must be from 1 ms to 24 h, not 0 ms");
  EXPECT_EQ(seen[3],
            "crashed 13: on_receive threw: send_after: \"nowhere\" is not an address system/isolate");
  EXPECT_EQ(owner->sends.size(), 1u);
}

TEST_F(WorkerCell, SendAskReplyAndForwardBuildTheirEnvelopes) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"send", "other/sink"}},
                          {{"ask", "other/service"}},
                          "reply",
                          {{"forward", "other/next"}},
                          "done"}),
                  11);
  settle();
  EXPECT_EQ(take(), (lines{"receive 1", "send other.sink", "send other.service", "send src.pool",
                           "send other.next", "done 11"}));
  ASSERT_EQ(owner->sends.size(), 4u);
  auto& send = owner->sends[0].e;
  EXPECT_EQ(send.from, "unit/pool");
  EXPECT_EQ(send.to, "other/sink");
  EXPECT_FALSE(send.id.empty());
  EXPECT_EQ(owner->sends[0].mode, delivery_mode::at_least_once);
  auto& ask = owner->sends[1].e;
  EXPECT_EQ(ask.ask_instance, owner->instance());
  EXPECT_EQ(ask.ask_worker, c->id());
  auto& reply = owner->sends[2].e;  // a plain message: the reply goes to its sender
  EXPECT_EQ(reply.to, "src/pool");
  EXPECT_EQ(reply.body["answer"], "m1");
  auto& forwarded = owner->sends[3].e;  // unchanged: same id, same sender
  EXPECT_EQ(forwarded.id, "m1");
  EXPECT_EQ(forwarded.from, "src/pool");
  EXPECT_EQ(forwarded.to, "other/next");
}

TEST_F(WorkerCell, AReplyToAnAskGoesToTheAskingInstanceAndWorkerAndAReplyToARaceLostIsDropped) {
  auto c = started_cell();
  envelope e;
  e.id = "asked";
  e.from = "src/pool";
  e.to = "unit/pool";
  e.ask_instance = "0a1b2c3d-0000-4000-8000-000000000001";
  e.ask_worker = "w-9";
  e.body = {{"tag", 1}, {"steps", {"reply", "done"}}};
  c->post_message(to_message(e, false), 11);
  e.id = "raced";
  e.body["tag"] = 2;
  owner->lost_races.insert("raced");
  c->post_message(to_message(e, false), 12);
  settle();
  EXPECT_EQ(take(),
            (lines{"receive 1", "send " + reply_topic(e.ask_instance), "done 11", "receive 2", "done 12"}));
  ASSERT_EQ(owner->sends.size(), 1u);
  EXPECT_EQ(owner->sends[0].mode, delivery_mode::reply);
  EXPECT_EQ(owner->sends[0].e.in_reply_to, "asked");
  EXPECT_EQ(owner->sends[0].e.to_worker, "w-9");
}

TEST_F(WorkerCell, ARateLimitWhileHandlingAReplyBacksOffTheMessageHeldNotTheReply) {
  auto c = answer_held_ask({"rate_limited"});
  ASSERT_EQ(owner->limited_messages.size(), 1u) << testing::PrintToString(take());
  EXPECT_EQ(owner->limited_messages[0].id(), "m1") << "the delivery is tried again, not the reply";
  EXPECT_EQ(owner->limited_messages[0].body()["tag"], 1);
}

TEST_F(WorkerCell, AReplyReachesTheWorkerWhileItHoldsAMessageWhichItCanThenFinish) {
  auto c = answer_held_ask({"done"});
  EXPECT_EQ(take(), (lines{"reply 100", "done 11"}));
}

TEST_F(WorkerCell, ABadAddressIsTheWorkersFailureWithThePreciseReason) {
  auto c = started_cell();
  c->post_message(msg(1, {{{"send", "no-slash"}}}), 11);
  settle();
  EXPECT_EQ(take(),
            (lines{"receive 1",
                   "crashed 11: on_receive threw: send: \"no-slash\" is not an address system/isolate"}));
}

TEST_F(WorkerCell, PingSaysWhetherTheWorkerIsBusyAndFailCurrentFailsOnlyAHeldMessage) {
  auto c = started_cell();
  std::optional<bool> busy;
  c->ping([&](bool b, std::chrono::milliseconds) { busy = b; });
  c->fail_current("too slow");  // idle: nothing to fail
  settle();
  ASSERT_TRUE(busy);
  EXPECT_FALSE(*busy);
  EXPECT_TRUE(take().empty());

  c->post_message(msg(1, {"hold"}), 11);
  settle();
  take();
  busy.reset();
  c->ping([&](bool b, std::chrono::milliseconds) { busy = b; });
  c->fail_current("held longer than the pool allows");
  settle();
  ASSERT_TRUE(busy);
  EXPECT_TRUE(*busy);
  EXPECT_EQ(take(), (lines{"crashed 11: held longer than the pool allows"}));
}

TEST_F(WorkerCell, AConstructorOrOnStartThatThrowsIsReportedNotThrown) {
  auto refused = make_cell({{"throw_in_constructor", true}});
  auto created = refused->create();
  ASSERT_FALSE(created);
  EXPECT_NE(created.error().find("constructor refused, as asked"), std::string::npos) << created.error();

  auto c = make_cell({{"throw_on_start", true}});
  ASSERT_TRUE(c->create());
  c->start();
  c->post_message(msg(1, {"done"}), 11);
  settle();
  EXPECT_EQ(take(), (lines{"start", "crashed 0: on_start threw: on_start refused, as asked"}));
}

}  // namespace
}  // namespace dde::runtime
