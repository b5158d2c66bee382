#pragma once
// Lets stop() wait a bounded time for a broker thread to finish. A thread blocked inside
// rabbitmq-c (a publish while the broker blocks the connection) is then freed by shutting its
// socket down.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "dde/core/daemon.hpp"

namespace dde::mqs {

class exit_latch {
 public:
  /// The thread is done.
  void set() {
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return done_; });
  }
  /// Waits up to `timeout`; if the thread is still busy, shuts `socket_fd` down and returns false.
  bool wait_or_shutdown(std::chrono::milliseconds timeout, const std::atomic<int>& socket_fd) {
    std::unique_lock lock(mutex_);
    if (cv_.wait_for(lock, timeout, [&] { return done_; })) return true;
    if (int fd = socket_fd.load(); fd >= 0) ::shutdown(fd, SHUT_RDWR);
    return false;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
};

/// The life of a thread that owns a broker connection (the enqueuer's, the dequeuer's): started
/// once; stopped by raising `stopping`, waking it, and waiting at most 10 s for it to let go.
class broker_thread {
 public:
  std::atomic<bool> stopping{false};
  std::atomic<int> socket_fd{-1};  ///< of the current connection, shut down if the thread hangs
  exit_latch exited;               ///< set by the thread as it ends

  /// Starts the thread, named `name` (top, perf, /proc/<pid>/task/*/comm).
  void start(std::string name, std::function<void()> run) {
    thread_ = std::thread([name = std::move(name), run = std::move(run)] {
      dde::name_this_thread(name);
      run();
    });
  }
  /// Stops and joins the thread; false when its connection had to be shut down to free it. Without
  /// a thread (tests turn the loop themselves) it only marks the next turn as the last.
  bool stop(const std::function<void()>& wake) {
    stopping = true;
    if (!thread_.joinable()) return true;
    wake();
    bool clean = exited.wait_or_shutdown(std::chrono::seconds(10), socket_fd);
    thread_.join();
    return clean;
  }

 private:
  std::thread thread_;
};

}  // namespace dde::mqs
