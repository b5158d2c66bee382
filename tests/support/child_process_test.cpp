// Tests of child_process and the small helpers (no broker needed, but they share support_rmqtest).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <system_error>

#include "dde_test.hpp"

namespace dde::test {
namespace {

/// True while `pid` exists and is not a zombie.
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  if (!(stat >> pid_field >> comm >> state)) return false;
  return state != "Z" && state != "X";
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ChildProcess, ReportsExitStatusAndCapturesOutput) {
  const auto dir = fresh_dir("child-exit");
  child_process child({"/bin/sh", "-c", "echo to-stdout; echo to-stderr >&2; exit 3"}, dir / "child.log");
  const auto status = child.wait_exit(10s);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 3);
  EXPECT_FALSE(child.running());
  EXPECT_NE(child.log().find("to-stdout\n"), std::string::npos) << child.log();
  EXPECT_NE(child.log().find("to-stderr\n"), std::string::npos) << child.log();
}

TEST(ChildProcess, MergesExtraEnvironmentIntoInheritedOne) {
  const auto dir = fresh_dir("child-env");
  child_process child({"sh", "-c", "echo \"x=$DDE_TEST_X path_set=${PATH:+yes}\""}, dir / "child.log",
                      {{"DDE_TEST_X", "hello"}});
  ASSERT_TRUE(child.wait_exit(10s).has_value());
  EXPECT_EQ(child.log(), "x=hello path_set=yes\n");
}

TEST(ChildProcess, StopEndsAProcessWithSigterm) {
  const auto dir = fresh_dir("child-term");
  child_process child({"sleep", "60"}, dir / "child.log");
  EXPECT_TRUE(child.running());
  const int status = child.stop(5s);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

TEST(ChildProcess, StopFallsBackToSigkillWhenSigtermIsIgnored) {
  const auto dir = fresh_dir("child-kill");
  child_process child({"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done"},
                      dir / "child.log");
  ASSERT_TRUE(wait_until([&] { return child.log() == "ready\n"; }, 10s));
  const int status = child.stop(300ms);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

TEST(ChildProcess, ThrowsWhenTheProgramCannotBeExecuted) {
  const auto dir = fresh_dir("child-missing");
  EXPECT_THROW(child_process({"/nonexistent/program"}, dir / "child.log"), std::system_error);
}

TEST(ChildProcess, DiesWhenTheTestProcessDies) {
  // "threadsafe" re-executes this binary (it runs this test body up to here again) for the dying
  // process instead of forking this one; both sides name the pid file after this process.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto pid_file = [](int test_pid) {
    return std::filesystem::path(DDE_TEST_TMP) / ("orphan-" + std::to_string(test_pid) + ".pid");
  };
  EXPECT_EXIT(
      {
        child_process child({"sleep", "60"}, fresh_dir("child-orphan") / "child.log");
        std::ofstream(pid_file(::getppid())) << child.pid();
        ::_exit(7);  // no destructors: only PR_SET_PDEATHSIG can end the child
      },
      ::testing::ExitedWithCode(7), "");
  const int pid = std::stoi(read_text(pid_file(::getpid())));
  std::filesystem::remove(pid_file(::getpid()));
  EXPECT_TRUE(wait_until([&] { return !alive(pid); }, 10s)) << "child " << pid << " outlived its parent";
}

TEST(Helpers, FreePortIsClosedAndPortOpenSeesAListener) {
  const auto port = free_port();
  EXPECT_GT(port, 0);
  EXPECT_FALSE(port_open(port));
  const auto dir = fresh_dir("listener");
  child_process listener(
      {"python3", "-c",
       "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1'," + std::to_string(port) +
           "))\ns.listen()\nprint('up',flush=True)\ntime.sleep(60)"},
      dir / "listener.log");
  EXPECT_TRUE(wait_until([&] { return port_open(port); }, 10s)) << listener.log();
  listener.kill9();
  EXPECT_TRUE(wait_until([&] { return !port_open(port); }, 10s));
}

TEST(Helpers, FreePortStaysBelowTheEphemeralRangeAndNeverRepeatsInAProcess) {
  // Outgoing connections take their source ports from the ephemeral range: a port picked there can
  // be taken by a neighbour's connect() before the daemon it was meant for binds it.
  unsigned first = 0, last = 0;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> first >> last;
  ASSERT_GT(first, 0u);
  const auto [low, high] = listen_port_range();
  ASSERT_NE(low, 0) << "this machine's ephemeral range " << first << "-" << last << " leaves no room";
  EXPECT_LT(high, first);
  std::set<std::uint16_t> seen;
  for (int i = 0; i < 300; ++i) {
    const auto port = free_port();
    EXPECT_GE(port, low);
    EXPECT_LE(port, high);
    EXPECT_TRUE(seen.insert(port).second) << "port " << port << " handed out twice";
  }
}

TEST(Helpers, APortClaimedByALiveProcessIsNotHandedOutAndADeadOnesClaimIsTakenOver) {
  const auto [low, high] = listen_port_range();
  ASSERT_NE(low, 0);
  const auto port = free_port();
  EXPECT_FALSE(claim_port(port)) << "free_port claimed it for this process";
  const auto ports = std::filesystem::path(DDE_TEST_TMP) / "ports";
  // Another port, claimed by another (live) process, then by one that is gone.
  std::uint16_t other = port == high ? low : static_cast<std::uint16_t>(port + 1);
  while (std::filesystem::exists(ports / std::to_string(other))) other = other == high ? low : other + 1;
  const auto dir = fresh_dir("claims");
  child_process neighbour({"sleep", "60"}, dir / "sleep.log");
  std::ofstream(ports / std::to_string(other)) << neighbour.pid();
  EXPECT_FALSE(claim_port(other)) << "claimed by a live test process beside this one";
  neighbour.kill9();
  EXPECT_TRUE(claim_port(other)) << "its claimer is gone";
  std::string holder;
  std::ifstream(ports / std::to_string(other)) >> holder;
  EXPECT_EQ(holder, std::to_string(::getpid()));
}

TEST(Helpers, FreshDirIsEmptyAndUnique) {
  const auto a = fresh_dir("same");
  const auto b = fresh_dir("same");
  EXPECT_NE(a, b);
  EXPECT_TRUE(std::filesystem::is_directory(a));
  EXPECT_TRUE(std::filesystem::is_empty(a));
  EXPECT_EQ(bin_path("x"), std::filesystem::path(DDE_BIN_DIR) / "x");
  EXPECT_EQ(worker_path("echo"), std::filesystem::path(DDE_WORKER_DIR) / "libecho.so");
}

}  // namespace
}  // namespace dde::test
