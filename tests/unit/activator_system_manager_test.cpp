// The activator's system manager without a process or a socket: a fake process table records what it
// starts and signals, recording connections stand for the isolate systems' /control links, and the
// test answers their requests. Deploy waits for the hello of the instance it started; a crash is
// restarted after the backoff and gets its pools back (with the last limits, and the last good
// plugin version when a swap crashed it); a link that closes answers what it left unanswered.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <set>

#include "dde/protocol/control_frames.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/swap_marker.hpp"
#include "recording_connection.hpp"
#include "system_manager.hpp"

namespace dde::activator {
namespace {

using namespace std::chrono_literals;
using testing::recording_connection;

class fake_processes final : public process_table {
 public:
  struct started {
    std::vector<std::string> argv;
    std::string log_path;
    pid_t pid;
    std::string arg(const std::string& flag) const {
      for (std::size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == flag) return argv[i + 1];
      return {};
    }
  };
  pid_t spawn(const std::vector<std::string>& argv, const std::string& log_path) override {
    if (refuse) return -1;
    pid_t pid = next_pid++;
    spawned.push_back({argv, log_path, pid});
    running.insert(pid);
    return pid;
  }
  void signal(pid_t pid, int sig) override {
    signals.emplace_back(pid, sig);
    if (!ignore_term || sig == SIGKILL) running.erase(pid);
  }
  bool alive(pid_t pid) override { return running.count(pid) > 0; }

  std::vector<started> spawned;
  std::vector<std::pair<pid_t, int>> signals;
  std::set<pid_t> running;
  bool refuse = false;
  bool ignore_term = false;
  pid_t next_pid = 1000;
};

nlohmann::json pool_body(const std::string& isolate = "consumer") {
  return {{"isolateSystemName", "sys"},    {"isolateName", isolate},
          {"uri", "/plugins/consumer.so"}, {"workersPaths", {"localhost", "localhost"}},
          {"routerType", "roundRobin"},    {"messageQueuingSystemServer", "ws://127.0.0.1:9/mqs"}};
}

int exit_status(int code) { return code << 8; }  // as wait(2) reports exit(code)

class SystemManager : public ::testing::Test {
 protected:
  SystemManager() {
    manager_options options;
    options.host_binary = "/bin/dde-isolate-system";
    options.control_url = "ws://127.0.0.1:7/control";
    options.log_dir = "/tmp/logs";
    options.restart_backoff = 1ms;
    manager = std::make_shared<system_manager>(io, options, procs);
  }

  /// Leaves nothing waiting on the manager (answers hold it, and it holds them): every link closes
  /// (what it left unanswered fails), every system stops and its process ends.
  ~SystemManager() override {
    for (auto& conn : links) manager->on_close(conn, "test over");
    bool stopped = false;
    manager->stop_all([&] { stopped = true; });
    run_until([&] { return stopped; });
    for (auto& proc : procs->spawned) manager->child_exited(proc.pid, 0);
    settle();
  }

  /// Runs the manager's work until `done()` holds (or fails the test after 10 s).
  template <class Pred>
  void run_until(Pred done) {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline)
        return ADD_FAILURE() << "the awaited event did not come";
      io.restart();
      io.run_one_for(100ms);
    }
  }
  void settle() {
    io.restart();
    io.poll();
  }

  /// A control link of the isolate system started as `proc`, which says hello.
  std::shared_ptr<recording_connection> attach(const fake_processes::started& proc, std::uint64_t id) {
    auto conn = std::make_shared<recording_connection>(id);
    links.push_back(conn);
    manager->on_open(conn);
    protocol::control_hello hello;
    hello.system = proc.arg("--name");
    hello.instance = proc.arg("--instance");
    hello.pid = proc.pid;
    hello.mqs = proc.arg("--mqs");
    manager->on_message(conn, protocol::encode(hello), false);
    settle();
    return conn;
  }

  /// The requests the manager sent on `conn` since the last call.
  static std::vector<protocol::control_request_frame> requests(recording_connection& conn) {
    std::vector<protocol::control_request_frame> out;
    for (auto& text : conn.sent) {
      auto parsed = protocol::parse_control_request(text);
      EXPECT_TRUE(parsed) << parsed.error();
      if (!parsed) continue;
      auto* frame = std::get_if<protocol::control_request_frame>(&parsed.value());
      EXPECT_NE(frame, nullptr) << text;
      if (frame) out.push_back(*frame);
    }
    conn.sent.clear();
    return out;
  }

  void answer(const std::shared_ptr<recording_connection>& conn, std::uint64_t id, bool ok,
              nlohmann::json result = nlohmann::json::object(), int status = 200, std::string error = {}) {
    manager->on_message(
        conn, protocol::encode(protocol::control_response{id, ok, std::move(result), status, error}), false);
    settle();
  }

  /// Deploys `body`, attaches the system it starts and answers its addIsolate: the link.
  std::shared_ptr<recording_connection> deployed(const nlohmann::json& body) {
    std::optional<outcome> got;
    manager->deploy(body, [&](outcome o) { got = o; });
    settle();
    EXPECT_EQ(procs->spawned.size(), 1u);
    auto conn = attach(procs->spawned.back(), 1);
    auto reqs = requests(*conn);
    EXPECT_EQ(reqs.size(), 1u);
    if (reqs.size() == 1) answer(conn, reqs[0].id, true);
    EXPECT_TRUE(got && *got);
    return conn;
  }

  nlohmann::json described() {
    std::optional<outcome> got;
    manager->describe([&](outcome o) { got = o; });
    run_until([&] { return got.has_value(); });
    return got ? got->value() : nlohmann::json();
  }

  boost::asio::io_context io;
  std::shared_ptr<fake_processes> procs = std::make_shared<fake_processes>();
  std::shared_ptr<system_manager> manager;
  std::vector<std::shared_ptr<recording_connection>> links;  ///< every control link a test opened
};

TEST_F(SystemManager, ADeployStartsTheSystemAndAddsThePoolOnceItsOwnInstanceSaysHello) {
  std::optional<outcome> got;
  manager->deploy(pool_body(), [&](outcome o) { got = o; });
  settle();
  ASSERT_EQ(procs->spawned.size(), 1u);
  auto& proc = procs->spawned[0];
  EXPECT_EQ(proc.argv[0], "/bin/dde-isolate-system");
  EXPECT_EQ(proc.arg("--name"), "sys");
  EXPECT_EQ(proc.arg("--mqs"), "ws://127.0.0.1:9/mqs");
  EXPECT_EQ(proc.arg("--control"), "ws://127.0.0.1:7/control");
  EXPECT_EQ(proc.log_path, "/tmp/logs/sys.log");
  EXPECT_FALSE(proc.arg("--instance").empty());
  EXPECT_EQ(proc.arg("--scheduling"), "batch");  // the activator's --host-scheduling
  EXPECT_FALSE(got);

  // Another instance of the same name (one a former activator left behind) is told to stop.
  auto stranger = std::make_shared<recording_connection>(9);
  links.push_back(stranger);
  protocol::control_hello other{"sys", "someone-else", 4242, "ws://127.0.0.1:9/mqs"};
  manager->on_message(stranger, protocol::encode(other), false);
  settle();
  auto told = requests(*stranger);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<protocol::control::shutdown>(told[0].request));
  EXPECT_FALSE(got);

  auto conn = attach(proc, 1);
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  auto* add = std::get_if<protocol::control::add_isolate>(&reqs[0].request);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->spec["isolateName"], "consumer");
  EXPECT_FALSE(got);
  answer(conn, reqs[0].id, true);
  ASSERT_TRUE(got);
  EXPECT_TRUE(bool(*got));
  EXPECT_EQ(got->value()["isolateSystemName"], "sys");
  EXPECT_EQ(got->value()["isolateName"], "consumer");
  EXPECT_EQ(got->value()["instance"], proc.arg("--instance"));
}

TEST_F(SystemManager, ASecondPoolGoesToTheRunningSystemAndAnotherMqsIsAConflict) {
  auto conn = deployed(pool_body());
  std::optional<outcome> second, other_mqs;
  manager->deploy(pool_body("second"), [&](outcome o) { second = o; });
  auto elsewhere = pool_body("third");
  elsewhere["messageQueuingSystemServer"] = "ws://127.0.0.1:10/mqs";
  manager->deploy(elsewhere, [&](outcome o) { other_mqs = o; });
  settle();
  EXPECT_EQ(procs->spawned.size(), 1u);
  ASSERT_TRUE(other_mqs);
  EXPECT_EQ(http_status(*other_mqs), 409);
  EXPECT_NE(other_mqs->error().find("already runs on this node with MQS ws://127.0.0.1:9/mqs"),
            std::string::npos);
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  // The host's refusal is the deploy's answer, status and all.
  answer(conn, reqs[0].id, false, nullptr, 400, "field \"uri\": no such plugin");
  ASSERT_TRUE(second);
  EXPECT_FALSE(bool(*second));
  EXPECT_EQ(http_status(*second), 400);
  EXPECT_EQ(second->error(), "field \"uri\": no such plugin");
}

TEST_F(SystemManager, BadDeploysAreRefusedBeforeAnyProcessStarts) {
  std::vector<outcome> got;
  auto no_name = pool_body();
  no_name.erase("isolateName");
  auto bad_mqs = pool_body();
  bad_mqs["messageQueuingSystemServer"] = "http://127.0.0.1:9/mqs";
  manager->deploy(no_name, [&](outcome o) { got.push_back(o); });
  manager->deploy(bad_mqs, [&](outcome o) { got.push_back(o); });
  procs->refuse = true;
  manager->deploy(pool_body(), [&](outcome o) { got.push_back(o); });
  settle();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(http_status(got[0]), 400);
  EXPECT_NE(got[0].error().find("isolateName"), std::string::npos) << got[0].error();
  EXPECT_EQ(http_status(got[1]), 400);
  EXPECT_NE(got[1].error().find("messageQueuingSystemServer"), std::string::npos);
  EXPECT_EQ(http_status(got[2]), 500);
  EXPECT_TRUE(procs->spawned.empty());
  EXPECT_EQ(described(), nlohmann::json::object());  // nothing left behind
}

TEST_F(SystemManager, AFailedDeployLeavesNoEmptySystemBehindAndADeployMeanwhileStartsItAfresh) {
  std::optional<outcome> got, again;
  manager->deploy(pool_body(), [&](outcome o) { got = o; });
  settle();
  ASSERT_EQ(procs->spawned.size(), 1u);
  auto conn = attach(procs->spawned[0], 1);
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  answer(conn, reqs[0].id, false, nullptr, 400, "cannot load /plugins/consumer.so: no such file");
  ASSERT_TRUE(got);
  EXPECT_EQ(http_status(*got), 400);
  EXPECT_EQ(got->error(), "cannot load /plugins/consumer.so: no such file");
  reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u) << "the system that runs nothing is told to stop";
  EXPECT_TRUE(std::holds_alternative<protocol::control::shutdown>(reqs[0].request));

  // A deploy while it stops waits for it to be gone, then starts it afresh.
  manager->deploy(pool_body("fixed"), [&](outcome o) { again = o; });
  settle();
  EXPECT_FALSE(again);
  EXPECT_EQ(procs->spawned.size(), 1u);
  answer(conn, reqs[0].id, true);
  manager->on_close(conn, "eof");
  manager->child_exited(procs->spawned[0].pid, exit_status(0));
  settle();
  ASSERT_EQ(procs->spawned.size(), 2u);
  auto conn2 = attach(procs->spawned[1], 2);
  reqs = requests(*conn2);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(std::get<protocol::control::add_isolate>(reqs[0].request).spec["isolateName"], "fixed");
  answer(conn2, reqs[0].id, true);
  ASSERT_TRUE(again && *again);
}

TEST_F(SystemManager, AFailedDeployToASystemThatRunsOtherPoolsLeavesItRunning) {
  auto conn = deployed(pool_body());
  std::optional<outcome> got;
  manager->deploy(pool_body("broken"), [&](outcome o) { got = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  answer(conn, reqs[0].id, false, nullptr, 400, "no such plugin");
  ASSERT_TRUE(got);
  EXPECT_FALSE(*got);
  EXPECT_TRUE(requests(*conn).empty()) << "no shutdown: it runs consumer";
  EXPECT_TRUE(procs->signals.empty());
}

TEST_F(SystemManager, ASystemThatNeverSaysHelloFailsTheDeployAndIsStopped) {
  manager_options options;
  options.host_binary = "/bin/dde-isolate-system";
  options.start_timeout = 20ms;
  manager = std::make_shared<system_manager>(io, options, procs);
  std::optional<outcome> got;
  manager->deploy(pool_body(), [&](outcome o) { got = o; });
  run_until([&] { return got.has_value(); });
  ASSERT_TRUE(got);
  EXPECT_EQ(http_status(*got), 502);
  EXPECT_EQ(got->error(), "isolate system \"sys\" did not start: no hello within 20 ms");
  ASSERT_EQ(procs->signals.size(), 1u);
  EXPECT_EQ(procs->signals[0], std::make_pair(procs->spawned[0].pid, SIGTERM));
  manager->child_exited(procs->spawned[0].pid, SIGTERM);
  settle();
  EXPECT_EQ(described(), nlohmann::json::object());
}

TEST_F(SystemManager, ASystemThatDiesBeforeItsHelloFailsTheDeployAndIsNotRestarted) {
  std::optional<outcome> got;
  manager->deploy(pool_body(), [&](outcome o) { got = o; });
  settle();
  ASSERT_EQ(procs->spawned.size(), 1u);
  manager->child_exited(procs->spawned[0].pid, exit_status(127));
  settle();
  ASSERT_TRUE(got);
  EXPECT_EQ(http_status(*got), 502);
  EXPECT_EQ(got->error(), "isolate system \"sys\" did not start: the process exited with status 127");
  EXPECT_EQ(described(), nlohmann::json::object());
  EXPECT_EQ(procs->spawned.size(), 1u);
}

TEST_F(SystemManager, ACrashedSystemIsRestartedAfterItsBackoffAndGetsItsPoolsBackWithTheirNewLimits) {
  auto conn = deployed(pool_body());
  std::optional<outcome> rate;
  manager->set_rate("sys", "consumer", {{"rate", {{"messages", 7}, {"perMs", 1000}}}},
                    [&](outcome o) { rate = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<protocol::control::set_rate>(reqs[0].request));
  answer(conn, reqs[0].id, true);
  ASSERT_TRUE(rate && *rate);

  auto first = procs->spawned[0];
  procs->running.erase(first.pid);
  manager->on_close(conn, "eof");
  manager->child_exited(first.pid, SIGKILL);  // killed by signal 9
  settle();
  auto facts = described()["sys"];
  ASSERT_EQ(facts.size(), 1u);  // what it will run, while it is not attached
  EXPECT_EQ(facts[0]["restarts"], 1);
  EXPECT_EQ(facts[0]["lastExit"], "was killed by signal 9");
  EXPECT_EQ(facts[0]["id"], "sys/consumer");
  EXPECT_EQ(facts[0]["state"], "restarting");

  run_until([&] { return procs->spawned.size() == 2; });
  ASSERT_EQ(procs->spawned.size(), 2u);
  auto second = procs->spawned[1];
  EXPECT_NE(second.arg("--instance"), first.arg("--instance"));
  auto conn2 = attach(second, 2);
  reqs = requests(*conn2);
  ASSERT_EQ(reqs.size(), 1u);
  auto* add = std::get_if<protocol::control::add_isolate>(&reqs[0].request);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->spec["isolateName"], "consumer");
  EXPECT_EQ(add->spec["workersPaths"], pool_body()["workersPaths"]);
  EXPECT_EQ(add->spec["rate"], (nlohmann::json{{"messages", 7}, {"perMs", 1000}}));
  EXPECT_FALSE(add->spec.contains("crashedMd5"));
}

/// A deployed system whose pool's version `good` proved itself: `before_crash` runs, then the process
/// dies of `signal`; returns the pool spec the restarted system is asked to add.
class SwapCrash : public SystemManager {
 protected:
  nlohmann::json redeployed_after(
      std::function<void(const std::shared_ptr<recording_connection>&)> before_crash, int signal) {
    auto conn = deployed(pool_body());
    event(
        conn,
        {{"event", "pluginGood"}, {"isolateName", "consumer"}, {"md5", "good"}, {"path", "/cache/good.so"}});
    before_crash(conn);
    settle();
    manager->on_close(conn, "eof");
    manager->child_exited(procs->spawned[0].pid, signal);
    run_until([&] { return procs->spawned.size() == 2; });
    if (procs->spawned.size() != 2) return nullptr;
    auto reqs = requests(*attach(procs->spawned[1], 2));
    if (reqs.size() != 1) return nullptr;
    return std::get<protocol::control::add_isolate>(reqs[0].request).spec;
  }
  void event(const std::shared_ptr<recording_connection>& conn, nlohmann::json fields) {
    manager->on_message(conn, protocol::encode(protocol::control_event{std::move(fields)}), false);
  }
};

TEST_F(SwapCrash, ASwapThatCrashedTheSystemIsRedeployedFromTheLastGoodVersion) {
  auto spec = redeployed_after(
      [&](auto& conn) {
        event(conn, {{"event", "pluginSwapping"}, {"isolateName", "consumer"}, {"md5", "bad"}});
      },
      SIGSEGV);
  ASSERT_TRUE(spec.is_object()) << "the restarted system is asked to add its pool once";
  EXPECT_EQ(spec["lastGoodCopy"], "/cache/good.so");
  EXPECT_EQ(spec["crashedMd5"], "bad");
  EXPECT_EQ(spec["crashReason"], "the process was killed by signal 11");
}

TEST_F(SwapCrash, ASwapWhoseEventNeverLeftTheCrashingSystemIsFoundByItsMarkerFile) {
  // The process died 12 ms into the swap, its pluginSwapping event still queued: only the marker tells.
  auto marker = protocol::swap_marker_path("/tmp/logs/plugin-cache", "sys", "consumer");
  auto spec =
      redeployed_after([&](auto&) { ASSERT_TRUE(protocol::write_swap_marker(marker, "bad")); }, SIGABRT);
  ASSERT_TRUE(spec.is_object()) << "the restarted system is asked to add its pool once";
  EXPECT_EQ(spec["lastGoodCopy"], "/cache/good.so");
  EXPECT_EQ(spec["crashedMd5"], "bad");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "read once: a later crash is not blamed on it";
}

TEST_F(SystemManager, RestartsBackOffLongerWhileTheSystemKeepsCrashingAndAreCounted) {
  auto conn = deployed(pool_body());
  std::vector<std::chrono::steady_clock::duration> waited;
  for (int round = 1; round <= 3; ++round) {
    auto proc = procs->spawned.back();
    auto crashed = std::chrono::steady_clock::now();
    manager->child_exited(proc.pid, exit_status(1));
    run_until([&] { return procs->spawned.size() == std::size_t(round) + 1; });
    waited.push_back(std::chrono::steady_clock::now() - crashed);
    conn = attach(procs->spawned.back(), round + 1);
    auto reqs = requests(*conn);
    ASSERT_EQ(reqs.size(), 1u);
    answer(conn, reqs[0].id, true);
  }
  // 1, 2, then 4 ms: a lower bound, which load only lengthens.
  EXPECT_GE(waited[2], 4ms);

  std::optional<outcome> got;
  manager->describe([&](outcome o) { got = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  auto spec = parse_pool_spec(pool_body());
  ASSERT_TRUE(spec);
  answer(conn, reqs[0].id, true, {{"sys", {to_json(spec.value())}}});
  ASSERT_TRUE(got);
  auto facts = got->value()["sys"];
  ASSERT_EQ(facts.size(), 1u);
  EXPECT_EQ(facts[0]["restarts"], 3);
  EXPECT_EQ(facts[0]["lastExit"], "exited with status 1");
  EXPECT_EQ(facts[0]["state"], "running");
  EXPECT_EQ(facts[0]["pid"], procs->spawned.back().pid);
}

TEST_F(SystemManager, ASystemThatFailsToDescribeItselfShowsItsPoolsAsNotAnswering) {
  // An empty list read as a system running nothing: the dashboard drew a node with a stopped pool
  // green for one poll.
  auto conn = deployed(pool_body());
  std::optional<outcome> got;
  manager->describe([&](outcome o) { got = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  answer(conn, reqs[0].id, false, nlohmann::json::object(), 503, "busy");
  ASSERT_TRUE(got && *got);
  auto pools = got->value()["sys"];
  ASSERT_EQ(pools.size(), 1u) << got->value();
  EXPECT_EQ(pools[0]["id"], "sys/consumer");
  EXPECT_EQ(pools[0]["poolState"], "not answering: busy");
  EXPECT_EQ(pools[0]["state"], "running");
  EXPECT_EQ(pools[0]["messageQueuingSystemServer"], "ws://127.0.0.1:9/mqs");
}

TEST_F(SystemManager, ItsVersionGoesUpWithWhatTheSystemsChangeAndStaysPutThroughDescribes) {
  auto v0 = manager->version();
  auto conn = deployed(pool_body());
  auto v1 = manager->version();
  EXPECT_GT(v1, v0) << "a system started, attached and added a pool";
  std::optional<outcome> description;
  manager->describe([&](outcome o) { description = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  answer(conn, reqs[0].id, true, {{"sys", nlohmann::json::array()}});
  ASSERT_TRUE(description && *description);
  EXPECT_EQ(manager->version(), v1) << "a describe changes nothing";

  // A pool that scaled itself says so; so does a hot swap.
  manager->on_message(conn,
                      protocol::encode(protocol::control_event{
                          {{"event", "poolScaled"}, {"isolateName", "consumer"}, {"workers", 3}}}),
                      false);
  settle();
  auto v2 = manager->version();
  EXPECT_GT(v2, v1);

  std::optional<outcome> killed;
  manager->kill("sys", "consumer", nlohmann::json(), [&](outcome o) { killed = o; });
  settle();
  reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(manager->version(), v2) << "asked, not yet done";
  answer(conn, reqs[0].id, true, {{"killed", nlohmann::json::array()}});
  ASSERT_TRUE(killed);
  EXPECT_EQ(manager->version(), v2) << "a change the registry asked for: it describes that pool itself";

  manager->child_exited(procs->spawned[0].pid, SIGKILL);
  settle();
  EXPECT_GT(manager->version(), v2) << "the system died: it is restarting";
}

TEST_F(SystemManager, AScopedDescribeAsksOnlyTheNamedSystemsForTheNamedPools) {
  auto conn = deployed(pool_body());
  std::optional<outcome> got;
  manager->describe(protocol::node::describe_scope{{"sys", {"consumer"}}, {"elsewhere", {}}},
                    [&](outcome o) { got = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  auto* asked = std::get_if<protocol::control::describe>(&reqs[0].request);
  ASSERT_NE(asked, nullptr);
  EXPECT_EQ(asked->isolates, std::set<std::string>{"consumer"});
  answer(conn, reqs[0].id, true, {{"sys", nlohmann::json::array()}});
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(got->value(), (nlohmann::json{{"sys", nlohmann::json::array()}}))
      << "a system this node does not run is not in the answer";

  got.reset();
  manager->describe(protocol::node::describe_scope{{"other", {}}}, [&](outcome o) { got = o; });
  settle();
  EXPECT_TRUE(requests(*conn).empty()) << "sys is not asked";
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(got->value(), nlohmann::json::object());

  // Not attached: its pools as deployed, only the named ones.
  manager->on_close(conn, "gone");
  settle();
  got.reset();
  manager->describe(protocol::node::describe_scope{{"sys", {"nope"}}}, [&](outcome o) { got = o; });
  settle();
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(got->value(), (nlohmann::json{{"sys", nlohmann::json::array()}}));
  got.reset();
  manager->describe(protocol::node::describe_scope{{"sys", {"consumer"}}}, [&](outcome o) { got = o; });
  settle();
  ASSERT_TRUE(got && *got);
  ASSERT_EQ(got->value()["sys"].size(), 1u) << got->value();
  EXPECT_EQ(got->value()["sys"][0]["id"], "sys/consumer");
}

TEST_F(SystemManager, AClosedControlLinkAnswersItsPendingRequests) {
  auto conn = deployed(pool_body());
  std::optional<outcome> restarted, shut;
  manager->restart("sys", "consumer", [&](outcome o) { restarted = o; });
  settle();
  ASSERT_EQ(requests(*conn).size(), 1u);
  manager->on_close(conn, "connection reset");
  settle();
  ASSERT_TRUE(restarted);
  EXPECT_EQ(http_status(*restarted), 503);
  EXPECT_EQ(restarted->error(), "isolate system sys closed its control link (connection reset)");

  // Not attached now: a request is refused at once with the system's state.
  manager->restart("sys", "consumer", [&](outcome o) { restarted = o; });
  settle();
  EXPECT_EQ(http_status(*restarted), 503);
  EXPECT_EQ(restarted->error().rfind("isolate system sys is ", 0), 0u) << restarted->error();

  manager->shutdown("sys", "", [&](outcome o) { shut = o; });
  settle();
  ASSERT_TRUE(shut);  // no link: signalled at once
  EXPECT_TRUE(bool(*shut));
  ASSERT_EQ(procs->signals.size(), 1u);
  EXPECT_EQ(procs->signals[0], std::make_pair(procs->spawned[0].pid, SIGTERM));
  manager->child_exited(procs->spawned[0].pid, exit_status(0));
  settle();
  EXPECT_EQ(described(), nlohmann::json::object());  // stopped on purpose: not restarted
  EXPECT_EQ(procs->spawned.size(), 1u);
}

TEST_F(SystemManager, AShutdownOverTheLinkCountsTheLinkClosingAsItsAnswer) {
  auto conn = deployed(pool_body());
  std::optional<outcome> shut;
  manager->shutdown("sys", "", [&](outcome o) { shut = o; });
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<protocol::control::shutdown>(reqs[0].request));
  manager->on_close(conn, "eof");
  settle();
  ASSERT_TRUE(shut);
  ASSERT_TRUE(bool(*shut));
  EXPECT_EQ(shut->value()["stopped"]["isolateSystemName"], "sys") << "it says what it stopped";
  EXPECT_EQ(shut->value()["stopped"]["pools"], nlohmann::json::array({"consumer"})) << shut->value().dump();
}

TEST_F(SystemManager, UnknownSystemsAndPoolsAreNotFound) {
  std::vector<outcome> got;
  auto keep = [&](outcome o) { got.push_back(o); };
  manager->shutdown("nosys", "", keep);
  manager->restart("nosys", "p", keep);
  manager->kill("nosys", "p", nullptr, keep);
  manager->set_rate("nosys", "p", nlohmann::json::object(), keep);
  manager->migrate("nosys", "p", {"localhost"}, keep);
  settle();
  ASSERT_EQ(got.size(), 5u);
  for (auto& o : got) {
    EXPECT_FALSE(bool(o));
    EXPECT_EQ(http_status(o), 404);
    EXPECT_NE(o.error().find("nosys"), std::string::npos) << o.error();
  }
}

TEST_F(SystemManager, ASystemLeftByAnEarlierActivatorIsAdoptedWithItsPoolsAndRestartedWhenItDies) {
  auto conn = std::make_shared<recording_connection>(5);
  links.push_back(conn);
  manager->on_open(conn);
  protocol::control_hello hello{"old", "inst-1", 777, "ws://127.0.0.1:9/mqs"};
  procs->running.insert(777);
  manager->on_message(conn, protocol::encode(hello), false);
  settle();
  auto reqs = requests(*conn);
  ASSERT_EQ(reqs.size(), 1u);
  ASSERT_TRUE(std::holds_alternative<protocol::control::describe>(reqs[0].request));
  auto body = pool_body("adopted");
  body["isolateSystemName"] = "old";
  auto spec = parse_pool_spec(body);
  ASSERT_TRUE(spec) << spec.error();
  answer(conn, reqs[0].id, true, {{"old", {to_json(spec.value())}}});

  // Its socket closes; the process is not ours to reap, so the manager looks for it until it is gone.
  manager->on_close(conn, "eof");
  settle();
  EXPECT_TRUE(procs->spawned.empty());  // still alive
  procs->running.erase(777);
  run_until([&] { return !procs->spawned.empty(); });
  ASSERT_EQ(procs->spawned.size(), 1u);
  EXPECT_EQ(procs->spawned[0].arg("--name"), "old");
  auto conn2 = attach(procs->spawned[0], 6);
  reqs = requests(*conn2);
  ASSERT_EQ(reqs.size(), 1u);
  auto& add = std::get<protocol::control::add_isolate>(reqs[0].request);
  EXPECT_EQ(add.spec["isolateName"], "adopted");
  EXPECT_EQ(add.spec["uri"], "/plugins/consumer.so");
}

TEST_F(SystemManager, StopAllTermsEverySystemAndKillsWhatOutlivesTheGrace) {
  deployed(pool_body());
  bool done = false;
  manager->stop_all([&] { done = true; });
  run_until([&] { return done; });
  ASSERT_EQ(procs->signals.size(), 1u);
  EXPECT_EQ(procs->signals[0].second, SIGTERM);
  // It ended when told: no restart follows its exit.
  manager->child_exited(procs->spawned[0].pid, exit_status(0));
  settle();
  EXPECT_EQ(procs->spawned.size(), 1u);
}

}  // namespace
}  // namespace dde::activator
