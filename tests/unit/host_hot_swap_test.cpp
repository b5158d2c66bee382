// Hot deployment and RESTART without a router: a fake pool of slots whose instances record what the
// swap does to them, real plugins (echo v1 and v2) and a manual clock for the plugin source's polls.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "dde/protocol/pool_spec.hpp"
#include "hot_swap.hpp"
#include "manual_clock.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;

/// One instance: what happened to it, in order; kill() waits for the test to let it end.
struct fake_instance : cell {
  std::string name;
  std::vector<std::string>& journal;
  bool creatable = true;
  std::function<void()> kill_done;
  fake_instance(std::string n, std::vector<std::string>& j, bool ok)
      : name(std::move(n)), journal(j), creatable(ok) {}
  result<bool> create() override {
    if (!creatable) return result<bool>::failure("cannot create " + name);
    return true;
  }
  void start() override { journal.push_back("start " + name); }
  void post_message(message&&, std::uint64_t) override {}
  void post_reply(message) override {}
  void kill(std::function<void()> done) override {
    journal.push_back("kill " + name);
    kill_done = std::move(done);
  }
  std::string id() const override { return name; }
  void supervise(directive, std::chrono::milliseconds) override {}
  void ping(std::function<void(bool, std::chrono::milliseconds)>) override {}
  void fail_current(std::string) override {}
};

/// The pool's slots as a swap sees them: local slots, some killed or parked, messages in flight.
struct fake_slots : swap_host {
  std::vector<std::string> journal;
  std::vector<std::shared_ptr<fake_instance>> running;
  std::vector<bool> killed, parked;
  std::size_t in_flight_now = 0;
  bool creatable = true, held = false;
  int made = 0, restarts = 0;
  std::vector<std::function<void()>> later_calls;

  explicit fake_slots(std::size_t n) : killed(n, false), parked(n, false) {
    for (std::size_t i = 0; i < n; ++i)
      running.push_back(std::make_shared<fake_instance>("old" + std::to_string(i), journal, true));
  }
  std::size_t slot_count() const override { return running.size(); }
  std::string worker_id(std::size_t index) const override { return running[index]->name; }
  bool swaps(std::size_t index, bool revive_killed) const override {
    return !(killed[index] && (!revive_killed || parked[index]));
  }
  std::shared_ptr<cell> make_cell(std::size_t, const std::shared_ptr<worker_plugin>& plugin) override {
    EXPECT_TRUE(plugin);
    return std::make_shared<fake_instance>("new" + std::to_string(made++), journal, creatable);
  }
  void kill_instance(std::size_t index, std::function<void()> gone) override {
    running[index]->kill([gone = std::move(gone)] { gone(); });
  }
  void install(std::size_t index, std::shared_ptr<cell> fresh) override {
    running[index] = std::static_pointer_cast<fake_instance>(fresh);
    killed[index] = false;
    fresh->start();
  }
  void hold_messages(bool hold) override {
    held = hold;
    journal.emplace_back(hold ? "hold" : "release");
  }
  std::size_t in_flight() const override { return in_flight_now; }
  bool stopping() const override { return false; }
  bool restarting() const override { return false; }
  void restarted() override { ++restarts; }
  void later(std::function<void()> fn) override { later_calls.push_back(std::move(fn)); }
};

struct HotSwap : ::testing::Test {
  testing::manual_time t;
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dde-hot-swap-" + std::to_string(::getpid()));
  std::filesystem::path file = dir / "worker.so";
  fake_slots slots{3};
  pool_spec spec = [this] {
    std::filesystem::create_directories(dir);
    copy(std::string(DDE_WORKER_DIR) + "/libecho_v1.so");
    auto s = parse_pool_spec({{"isolateSystemName", "parts"},
                              {"isolateName", "swap"},
                              {"uri", file.string()},
                              {"workersPaths", {"localhost", "localhost", "localhost"}},
                              {"hotDeployment", true},
                              {"hotDeploymentIntervalMs", 1000}});
    EXPECT_TRUE(s) << s.error();
    return s.value();
  }();
  hot_swap hot{*t.clock, t.strand, spec, slots, [](plugin_source::fetch_done fn) { return fn; }};

  ~HotSwap() override {
    t.clock->clear();
    std::filesystem::remove_all(dir);
  }
  void copy(const std::string& from) {
    std::filesystem::copy_file(from, dir / "next.so", std::filesystem::copy_options::overwrite_existing);
    std::filesystem::rename(dir / "next.so", file);
  }
  /// Each old instance's before_kill ends.
  void old_ones_gone() {
    for (auto& i : std::vector(slots.running))
      if (i->kill_done) std::exchange(i->kill_done, nullptr)();
  }
};

TEST_F(HotSwap, ARestartWaitsForInFlightMessagesAndStartsNoNewInstanceBeforeEveryOldOneIsGone) {
  ASSERT_TRUE(hot.load(true, 0));
  slots.in_flight_now = 2;
  ASSERT_TRUE(hot.restart());
  EXPECT_TRUE(slots.held);
  EXPECT_TRUE(hot.busy());
  EXPECT_EQ(slots.journal, (std::vector<std::string>{"hold"}))
      << "nothing is stopped while messages are in flight";

  t.advance(250ms);
  slots.in_flight_now = 0;
  hot.drained();
  EXPECT_EQ(slots.journal, (std::vector<std::string>{"hold", "kill old0", "kill old1", "kill old2"}));
  std::exchange(slots.running[0]->kill_done, nullptr)();
  std::exchange(slots.running[1]->kill_done, nullptr)();
  EXPECT_EQ(slots.journal.size(), 4u) << "an old instance is still running";
  std::exchange(slots.running[2]->kill_done, nullptr)();

  EXPECT_EQ(slots.journal, (std::vector<std::string>{"hold", "kill old0", "kill old1", "kill old2",
                                                     "start new0", "start new1", "start new2", "release"}));
  EXPECT_EQ(slots.restarts, 1);
  EXPECT_FALSE(hot.busy());
  EXPECT_EQ(hot.describe()["lastSwapPauseMs"], 250);
}

TEST_F(HotSwap, ARestartRevivesKilledSlotsButNotParkedOnes) {
  ASSERT_TRUE(hot.load(true, 0));
  slots.killed = {true, true, false};
  slots.parked = {false, true, false};
  ASSERT_TRUE(hot.restart());
  old_ones_gone();
  EXPECT_EQ(slots.running[0]->name, "new0");
  EXPECT_EQ(slots.running[1]->name, "old1") << "a parked slot stays parked";
  EXPECT_EQ(slots.running[2]->name, "new1");
}

TEST_F(HotSwap, AnInstanceThatCannotBeMadeRefusesTheSwapAndChangesNothing) {
  ASSERT_TRUE(hot.load(true, 0));
  slots.creatable = false;
  auto refused = hot.restart();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), "cannot create new0");
  EXPECT_TRUE(slots.journal.empty());
  EXPECT_FALSE(hot.busy());
}

TEST_F(HotSwap, ASecondRestartDuringASwapAndOneWithoutALocalVersionAreRefusedWithWhy) {
  ASSERT_TRUE(hot.load(false, 3));
  auto remote_only = hot.restart();
  ASSERT_FALSE(remote_only);
  EXPECT_EQ(remote_only.error(), "pool parts/swap has no local workers to restart");

  ASSERT_TRUE(hot.load(true, 0));
  slots.in_flight_now = 1;
  ASSERT_TRUE(hot.restart());
  auto again = hot.restart();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error(), "pool parts/swap is already restarting");
}

TEST_F(HotSwap, APolledNewFileIsSwappedInAndBecomesTheRunningVersion) {
  ASSERT_TRUE(hot.load(true, 0));
  auto v1 = hot.md5();
  hot.poll();
  t.advance(1000ms);
  EXPECT_TRUE(slots.journal.empty()) << "the same file: nothing to swap";

  copy(std::string(DDE_WORKER_DIR) + "/libecho_v2.so");
  t.advance(1000ms);
  ASSERT_TRUE(hot.swapping());
  old_ones_gone();
  EXPECT_FALSE(hot.swapping());
  EXPECT_NE(hot.md5(), v1);
  EXPECT_EQ(hot.md5(), file_md5(file));
  EXPECT_EQ(slots.restarts, 0) << "a new version is not a restart";
  EXPECT_EQ(hot.describe()["swaps"], 1);
}

}  // namespace
}  // namespace dde::host
