#pragma once
// A queue from the Asio threads to one rabbitmq-c thread, with an eventfd the thread can poll()
// beside its AMQP socket: it sleeps until either has something, with no timer in between. An owner
// that runs on the Asio threads itself (the dequeuer's loop on the io_context) sets a notify
// callback instead: pushes then call it rather than write the eventfd, and take() reads nothing.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace dde::mqs {

template <class T>
class inbox {
 public:
  inbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~inbox() { ::close(fd_); }
  inbox(const inbox&) = delete;
  inbox& operator=(const inbox&) = delete;

  /// Thread-safe. Wakes the owner when the queue was empty (otherwise a wake is already pending).
  void push(std::vector<T>&& items) {
    if (items.empty()) return;
    bool was_empty;
    {
      std::lock_guard lock(mutex_);
      was_empty = items_.empty();
      if (was_empty)
        items_ = std::move(items);
      else
        for (auto& i : items) items_.push_back(std::move(i));
    }
    if (was_empty) wake();
  }

  /// Before the first push: `notify` (any thread) stands for the eventfd from then on.
  void set_notify(std::function<void()> notify) { notify_ = std::move(notify); }

  void wake() {
    if (notify_) return notify_();
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
  }

  /// The owner takes everything queued. Reads the eventfd first, so a push after it wakes again.
  std::vector<T> take() {
    if (!notify_) {
      std::uint64_t count;
      [[maybe_unused]] auto n = ::read(fd_, &count, sizeof count);
    }
    std::vector<T> out;
    std::lock_guard lock(mutex_);
    out.swap(items_);
    return out;
  }

  int fd() const { return fd_; }
  /// What the owner's last poll() saw of fd() (readable until told otherwise: a loop turned without
  /// a poll, by a test or on an io_context, takes every turn): take_seen() reads the eventfd only
  /// then, so a turn costs no read syscall when nothing came.
  void saw(bool readable) { seen_ = readable; }
  std::vector<T> take_seen() { return seen_ ? take() : std::vector<T>{}; }

 private:
  int fd_;
  bool seen_ = true;
  std::function<void()> notify_;
  std::mutex mutex_;
  std::vector<T> items_;
};

}  // namespace dde::mqs
