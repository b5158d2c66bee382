#pragma once
// The threads of a daemon's io_context (an isolate system's, the MQS's). One thread runs it all the
// time; the others (up to `threads` in all) join it only while it lags and leave when it no longer
// does. A light pool then runs on one thread, without Asio's reactor passing between two threads
// on every socket event (the host switched context about ten times less and used a quarter less
// CPU: bench/profile/consume.sh, DDE_ACTIVATOR_ARGS="--host-threads 1" against 2), while a worker
// whose handler runs long or blocks still gets the other threads within a period or two.
// Lagging, as a parked thread sees it every `period`: a probe it posted was not run within
// `lag` of being posted, or the threads already running were on a core at least `busy` of the period.
// A probe late while those threads were runnable, neither sleeping in a handler nor on a core for
// a quarter of the wait, is no lag: they waited for a core, a thread more would wait beside them and only
// add the context switches of two threads sharing the reactor (a loaded machine, every process busy).
// A joined thread runs the context for `stay`, then looks again (longer each time it finds the lag
// still there, up to 16 times `stay`). With `lag` 0 every thread runs the context all the time.
// A look that finds every running thread asleep in the reactor's epoll_wait (the kernel's wchan)
// posts no probe: such a thread has nothing queued, so nothing lags, and a probe would only wake
// it (an idle dde-mqs woke about 270 times a second, 100 of them for probes, and spent 1.75% of a
// core doing nothing). Looks in a row that find it so wait twice as long each time, up to
// `idle_wait`: each wakeup of the parked thread costs some 100 us of a core on a virtual machine,
// and ten idle isolate systems looking every 80 ms took 1.2% of one (bench/pool-scale.sh). So a
// handler that starts blocking after a quiet spell gets help within idle_wait, then within a period.

#include <time.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dde {
class metric_cell;
}

namespace dde::net {

struct elastic_options {
  int threads = 2;                           ///< at most this many threads run the context
  std::chrono::microseconds lag{1000};       ///< 0: all of them, all the time
  std::chrono::milliseconds period{10};      ///< how often a parked thread looks
  std::chrono::milliseconds stay{100};       ///< how long a joined thread runs before it looks again
  double busy = 0.9;                         ///< share of a period the running threads ran on a core
  std::chrono::milliseconds idle_wait{320};  ///< the longest wait between two looks at an idle context
  /// The metrics' names: `<prefix>_threads_running` and `<prefix>_thread_joins_total`.
  std::string metric_prefix = "dde_host";
  /// The threads' names in /proc, top and perf: `<thread_name>-<k>` (k from 0).
  std::string thread_name = "dde-io";
};

class elastic_threads {
 public:
  elastic_threads(boost::asio::io_context& io, elastic_options options);
  ~elastic_threads();
  elastic_threads(const elastic_threads&) = delete;
  elastic_threads& operator=(const elastic_threads&) = delete;

  void start();
  /// Blocks until io.stop() ended the first thread, then joins the others (a daemon's main thread).
  void wait_stopped();
  /// Parked threads end at once; the others when io.stop() has been called (join() does not stop
  /// the context). Call it outside the context's threads.
  void join();

  /// Threads running the context now (the first included), and how often a parked one joined.
  int running() const { return counts_.running.load(std::memory_order_relaxed); }
  std::uint64_t joins() const { return counts_.joins.load(std::memory_order_relaxed); }
  /// How often a parked thread looked, and how many of those looks posted a probe.
  std::uint64_t looks() const { return counts_.looks.load(std::memory_order_relaxed); }
  std::uint64_t probes() const { return counts_.probes.load(std::memory_order_relaxed); }

 private:
  void run_helper(int k);
  /// Waits `d` or until join(); true when joining.
  bool wait(std::chrono::nanoseconds d);
  /// Whether helper `k` should join: one period's look at the probe and the k threads before it.
  /// `idle_looks`: the caller's looks in a row that found every thread in the reactor; each waits
  /// twice as long as the last, up to idle_wait (a parked thread of an idle daemon wakes about 3
  /// times a second, not 100).
  bool lagging(int k, int& idle_looks);
  std::chrono::nanoseconds cpu_of(int k) const;
  /// Whether one of the first k threads sleeps now (blocked, e.g. in a handler; unknown counts).
  bool any_sleeping(int k) const;
  /// Whether each of the first k threads sleeps in the reactor's epoll_wait now (unknown: no).
  bool all_in_reactor(int k) const;
  /// Changes counts_.running under the mutex and wakes the helpers waiting for it.
  void set_running(int delta);

  boost::asio::io_context& io_;
  elastic_options options_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  std::vector<std::thread> threads_;
  std::vector<clockid_t> clocks_;  ///< each thread's CPU clock, set before the next thread starts
  /// Each thread's /proc/thread-self/stat, opened by the thread itself (-1: not yet, or none).
  std::vector<std::atomic<int>> stats_;
  /// And its /proc/thread-self/wchan (where in the kernel it sleeps), the same way.
  std::vector<std::atomic<int>> wchans_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  /// What the threads did: read from any thread, and the process's metrics of it.
  struct counters {
    counters(metric_cell& running_metric, metric_cell& joins_metric)
        : running_metric(running_metric), joins_metric(joins_metric) {}
    std::atomic<int> running{0};
    std::atomic<std::uint64_t> joins{0};
    std::atomic<std::uint64_t> looks{0};
    std::atomic<std::uint64_t> probes{0};
    metric_cell& running_metric;  ///< the process's <metric_prefix>_threads_running
    metric_cell& joins_metric;    ///< and <metric_prefix>_thread_joins_total
  } counts_;
};

}  // namespace dde::net
