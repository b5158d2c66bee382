#pragma once
// Lets stop() wait a bounded time for a broker thread to finish. A thread blocked inside
// rabbitmq-c (a publish while the broker blocks the connection) is then freed by shutting its
// socket down.

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace dde::mqs {

class exit_latch {
 public:
  /// The thread is done.
  void set() {
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
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

}  // namespace dde::mqs
