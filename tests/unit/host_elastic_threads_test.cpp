// A daemon's threads (dde/core/net/elastic_threads.hpp): the first runs the context alone until it lags,
// then the others join; a handler that blocks does not stop the rest.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <string>
#include <thread>

#include "dde/core/net/elastic_threads.hpp"

namespace dde::host {
namespace {

using namespace std::chrono_literals;
using net::elastic_options;
using net::elastic_threads;

/// Until `done()` holds or 20 s pass (a loaded machine may be slow, never that slow).
template <typename F>
bool eventually(F done) {
  auto until = std::chrono::steady_clock::now() + 20s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

/// Runs `fn` on one of the context's threads and waits until it has run.
template <typename F>
void run_on(boost::asio::io_context& io, F fn) {
  std::promise<void> done;
  boost::asio::post(io, [&] {
    fn();
    done.set_value();
  });
  done.get_future().wait();
}

/// Posts a handler that waits for the one posted after it (on one thread it would never end) and
/// expects the second to have run while the first blocked: a helper joined.
void expect_a_blocked_handler_does_not_stop_the_next(boost::asio::io_context& io) {
  std::promise<void> released;
  std::promise<std::future_status> blocked;
  boost::asio::post(io, [&] { blocked.set_value(released.get_future().wait_for(20s)); });
  boost::asio::post(io, [&] { released.set_value(); });
  auto status = blocked.get_future();
  ASSERT_EQ(status.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(status.get(), std::future_status::ready) << "the second handler ran while the first blocked";
}

TEST(ElasticThreads, AHandlerThatBlocksIsJoinedByASecondThreadThatRunsTheRest) {
  boost::asio::io_context io;
  elastic_threads threads(io, {2, 1000us, 5ms, 50ms, 0.9});
  threads.start();
  EXPECT_EQ(threads.running(), 1);
  expect_a_blocked_handler_does_not_stop_the_next(io);
  EXPECT_GE(threads.joins(), 1u);
  // With the lag gone the helper steps out again.
  EXPECT_TRUE(eventually([&] { return threads.running() == 1; })) << threads.running();
  io.stop();
  threads.join();
  EXPECT_EQ(threads.running(), 0);
}

TEST(ElasticThreads, ShortHandlersOnAnIdleContextRunOnOneThread) {
  boost::asio::io_context io;
  // A lag no scheduler delay reaches: only a handler that runs long would bring the helper.
  elastic_threads threads(io, {2, 500ms, 600ms, 50ms, 0.99});
  threads.start();
  std::set<std::thread::id> ran_on;  // one handler at a time: run_on waits for each
  for (int i = 0; i < 200; ++i) run_on(io, [&] { ran_on.insert(std::this_thread::get_id()); });
  EXPECT_EQ(ran_on.size(), 1u);
  EXPECT_EQ(threads.joins(), 0u);
  io.stop();
  threads.join();
}

TEST(ElasticThreads, AFirstThreadBusyOnCpuIsJoinedThoughEachHandlerIsShort) {
  boost::asio::io_context io;
  // Each handler spins 200 µs and posts the next: the probe waits less than the lag, but the
  // first thread is on a core almost all the time.
  elastic_threads threads(io, {2, 50ms, 20ms, 20ms, 0.3});
  threads.start();
  std::atomic<bool> stop{false};
  std::function<void()> spin = [&] {
    auto until = std::chrono::steady_clock::now() + 200us;
    while (std::chrono::steady_clock::now() < until) {
    }
    if (!stop) boost::asio::post(io, spin);
  };
  boost::asio::post(io, spin);
  EXPECT_TRUE(eventually([&] { return threads.joins() >= 1; }));
  stop = true;
  io.stop();
  threads.join();
}

/// Pins the calling thread to `cpu`; false when it may not.
bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) == 0;
}

TEST(ElasticThreads, AHandlerSpinningOnACoreIsJoinedOnceItsProbeIsLate) {
  boost::asio::io_context io;
  // A period the busy share cannot reach (busy 1.0): only the late probe brings the helper.
  elastic_threads threads(io, {2, 1000us, 5ms, 50ms, 1.0});
  threads.start();
  std::atomic<bool> stop{false};
  boost::asio::post(io, [&] {
    auto until = std::chrono::steady_clock::now() + 20s;
    while (!stop && std::chrono::steady_clock::now() < until) {
    }
  });
  EXPECT_TRUE(eventually([&] { return threads.joins() >= 1; }));
  stop = true;
  io.stop();
  threads.join();
}

// The first thread woken for a probe but kept off its core is not blocked: a second thread would
// wait for a core too, so none joins. The first thread runs on CPU 0 beside a SCHED_FIFO spinner
// there, the helper on CPU 1; the test watches the first thread runnable and not running for 20 ms
// (its /proc state and CPU clock). Needs CPUs 0 and 1 and SCHED_FIFO. (The kernel's fair server
// still gives CFS threads a slice of a starved core now and then: the test waits for a starved span.)
TEST(ElasticThreads, AProbeLateOnlyBecauseItsThreadWaitsForACoreBringsNoHelper) {
  using clock = std::chrono::steady_clock;
  cpu_set_t before;
  ASSERT_EQ(::pthread_getaffinity_np(::pthread_self(), sizeof before, &before), 0);
  if (!CPU_ISSET(0, &before) || !CPU_ISSET(1, &before)) GTEST_SKIP() << "needs CPUs 0 and 1";
  boost::asio::io_context io;
  elastic_threads threads(io, {2, 1000us, 5ms, 50ms, 0.9});
  ASSERT_TRUE(pin_to(1));  // the helper starts on CPU 1 (threads inherit their creator's CPUs)
  threads.start();
  ASSERT_EQ(::pthread_setaffinity_np(::pthread_self(), sizeof before, &before), 0);
  bool pinned = false;
  pid_t tid = 0;
  clockid_t cpu_clock{};
  run_on(io, [&] {  // the first thread, the only one running the context, goes to CPU 0
    pinned = pin_to(0) && ::pthread_getcpuclockid(::pthread_self(), &cpu_clock) == 0;
    tid = ::gettid();
  });
  ASSERT_TRUE(pinned);
  auto state = [&] {
    std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
    std::string line;
    std::getline(f, line);
    auto paren = line.rfind(')');
    return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
  };
  auto cpu_ns = [&] {
    timespec ts{};
    ::clock_gettime(cpu_clock, &ts);
    return std::int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  };
  std::atomic<bool> spinning{false}, fifo{true};
  const auto spin = 600ms;
  std::thread spinner([&] {
    sched_param p{};
    p.sched_priority = 1;
    fifo = pin_to(0) && ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &p) == 0;
    spinning = true;
    if (!fifo) return;
    auto until = clock::now() + spin;
    while (clock::now() < until) {
    }
  });
  while (!spinning) std::this_thread::yield();
  // Until the first thread has been runnable, and not on its core, for 20 ms on end.
  bool starved = false;
  auto since = clock::now();
  auto ran = cpu_ns();
  for (auto end = clock::now() + spin - 100ms; fifo && !starved && clock::now() < end;) {
    std::this_thread::sleep_for(1ms);
    if (state() != 'R' || cpu_ns() != ran) {
      since = clock::now();
      ran = cpu_ns();
    } else {
      starved = clock::now() - since >= 20ms;
    }
  }
  auto joins_while_starved = threads.joins();
  spinner.join();
  run_on(io, [] {});  // the first thread got its core back
  io.stop();
  threads.join();
  if (!fifo) GTEST_SKIP() << "SCHED_FIFO not permitted";
  if (!starved) GTEST_SKIP() << "the first thread was never kept off its core for 20 ms";
  EXPECT_EQ(joins_while_starved, 0u) << "a helper joined a thread that only waited for a core";
}

/// Where in the kernel thread `tid` of this process sleeps (/proc/self/task/<tid>/wchan).
std::string wchan_of(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/wchan");
  std::string where;
  std::getline(f, where);
  return where;
}

/// The thread of this process named `name` (/proc/self/task/<tid>/comm); 0 when none is.
pid_t thread_named(const std::string& name) {
  for (auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream f(task.path() / "comm");
    std::string comm;
    std::getline(f, comm);
    if (comm == name) return pid_t(std::stol(task.path().filename().string()));
  }
  return 0;
}

/// A context with a pending timer (so it has a reactor, and its thread sleeps in epoll_wait as a
/// daemon's does) run by elastic threads named `options.thread_name`.
struct idle_context {
  explicit idle_context(const elastic_options& options) : threads(io, options), name(options.thread_name) {
    timer.async_wait([](const boost::system::error_code&) {});
    threads.start();
  }
  ~idle_context() {
    timer.cancel();
    io.stop();
    threads.join();
  }
  idle_context(const idle_context&) = delete;
  idle_context& operator=(const idle_context&) = delete;
  /// Finds the first thread by its name: a handler run to ask it may run on the helper instead,
  /// when the helper joined at the start on a loaded machine, and the helper then parks for good.
  bool find_first() {
    return eventually([&] { return (tid = thread_named(name + "-0")) != 0; });
  }
  /// Whether the first thread waits in the reactor now.
  bool idle() const {
    auto w = wchan_of(tid);
    return w.rfind("do_epoll_wait", 0) == 0 || w.rfind("ep_poll", 0) == 0;
  }
  boost::asio::io_context io;
  boost::asio::steady_timer timer{io, std::chrono::hours(1)};
  elastic_threads threads;
  std::string name;
  pid_t tid = 0;
};

// An idle daemon's parked thread looks every period but wakes nobody: the first thread sleeps in
// the reactor's epoll_wait with nothing queued, so a probe could find no lag and would only wake it.
TEST(ElasticThreads, LooksAtAnIdleContextPostNoProbe) {
  elastic_options options{2, 1000us, 2ms, 50ms, 0.9};
  options.idle_wait = 16ms;
  options.thread_name = "idle-look";
  idle_context c(options);
  auto& threads = c.threads;
  ASSERT_TRUE(c.find_first());
  auto idle = [&] { return c.idle(); };
  if (!eventually(idle))
    GTEST_SKIP() << "the kernel does not say the thread waits in epoll_wait: " << wchan_of(c.tid);
  const auto looks = threads.looks(), probes = threads.probes();
  ASSERT_TRUE(eventually([&] { return threads.looks() >= looks + 50; }))
      << "the parked thread stopped looking";
  // Nothing ran on the context meanwhile; a look that raced the first thread's way into
  // epoll_wait may have probed (the look just before the count started).
  EXPECT_LE(threads.probes() - probes, 1u) << "of " << threads.looks() - looks << " looks";
  // Back in the reactor (a probe that raced may have woken it just now; under load its way back to
  // epoll_wait can wait for a core, so this waits for it rather than reading once).
  EXPECT_TRUE(eventually(idle)) << "the first thread waits in " << wchan_of(c.tid) << "; threads running "
                                << threads.running() << ", joins " << threads.joins() << ", probes "
                                << threads.probes() - probes << " in " << threads.looks() - looks << " looks";
  // A handler that blocks is still found: the first thread no longer waits in the reactor.
  expect_a_blocked_handler_does_not_stop_the_next(c.io);
  EXPECT_GE(threads.probes(), probes + 1);
  EXPECT_GE(threads.joins(), 1u);
}

// Looks at an idle context come further apart, up to idle_wait: each wakes the parked thread, which
// costs a daemon that does nothing.
TEST(ElasticThreads, LooksAtAnIdleContextBackOffToTheIdleWait) {
  elastic_options options{2, 1000us, 2ms, 50ms, 0.9};
  options.idle_wait = 40ms;
  options.thread_name = "idle-wait";
  idle_context c(options);
  ASSERT_TRUE(c.find_first());
  if (!eventually([&] { return c.idle(); }))
    GTEST_SKIP() << "the kernel does not say the thread waits in epoll_wait: " << wchan_of(c.tid);
  const auto start = std::chrono::steady_clock::now();
  const auto looks = c.threads.looks();
  std::this_thread::sleep_for(1s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const auto seen = c.threads.looks() - looks;
  // Waits of 2, 4, 8, 16 and 32 ms, then 40 ms each (a loaded machine only makes them longer); one
  // more for a look under way at each end. Every 16 ms (the wait it had before) would be over 60.
  const auto bound = std::uint64_t(elapsed / 40ms) + 5 + 2;
  EXPECT_LE(seen, bound) << "looks in "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms";
  EXPECT_GE(seen, 1u) << "the parked thread stopped looking";
}

TEST(ElasticThreads, LagZeroRunsEveryThreadAllTheTime) {
  boost::asio::io_context io;
  elastic_threads threads(io, {3, 0us, 5ms, 50ms, 0.9});
  threads.start();
  EXPECT_EQ(threads.running(), 3);
  // Two handlers that each wait for the other's start both finish: they run at once.
  std::atomic<int> started{0};
  std::promise<bool> a, b;
  auto meet = [&](std::promise<bool>& met) {
    ++started;
    met.set_value(eventually([&] { return started.load() == 2; }));
  };
  boost::asio::post(io, [&] { meet(a); });
  boost::asio::post(io, [&] { meet(b); });
  EXPECT_TRUE(a.get_future().get()) << "the other handler never started beside this one";
  EXPECT_TRUE(b.get_future().get());
  EXPECT_EQ(threads.joins(), 0u);
  io.stop();
  threads.join();
}

TEST(ElasticThreads, JoinEndsParkedHelpersAndAStoppedContextsThreads) {
  boost::asio::io_context io;
  elastic_threads threads(io, {4, 1000us, 5ms, 50ms, 0.9});
  threads.start();
  run_on(io, [] {});
  io.stop();
  threads.join();  // returns: the test would hang otherwise
  EXPECT_EQ(threads.running(), 0);
}

}  // namespace
}  // namespace dde::host
