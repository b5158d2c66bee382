#pragma once
/// \file
/// A throttler (seed 000, Akka's TimerBasedThrottler, made exact): items queue in FIFO order and go
/// to a target at most `messages` per `per`, in every window of that length wherever it is placed.
/// Header-only and free of Boost, so plugins can use it. Time and timers are injected: a worker
/// uses its `after` (see `dde::throttler`), tests use a fake clock and scheduler.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "dde/worker.hpp"

namespace dde {

/// A rate: at most `messages` deliveries in every window of length `per`.
struct throttle_rate {
  std::size_t messages = 1;
  std::chrono::milliseconds per{1000};
};

/// The throttling engine: a FIFO delivered to a target callback at most N per window (a sliding log
/// of delivery times, not a token refilled per tick). Not thread-safe: call it from one strand.
///
/// Idle/Active as in the seed: a timer is scheduled only while items wait and the rate forbids the
/// next delivery; with an empty queue no timer is scheduled (see `timers_scheduled`).
template <class T>
class throttle_queue {
 public:
  using clock = std::chrono::steady_clock;
  using now_fn = std::function<clock::time_point()>;
  /// Runs the callback once, `delay` from now (a worker's `after`, a test's fake scheduler).
  using schedule_fn = std::function<void(std::chrono::milliseconds delay, std::function<void()> fn)>;
  using target_fn = std::function<void(T item)>;

  /// Throws std::invalid_argument for a rate that allows nothing (see `set_rate`).
  throttle_queue(throttle_rate rate, now_fn now, schedule_fn schedule)
      : now_(std::move(now)), schedule_(std::move(schedule)), alive_(std::make_shared<bool>(true)) {
    check(rate);
    rate_ = rate;
  }
  throttle_queue(const throttle_queue&) = delete;
  throttle_queue& operator=(const throttle_queue&) = delete;

  /// Sets where items go (an empty function: none, and items queue until one is set). Items already
  /// queued go to the new target, as the rate allows.
  void set_target(target_fn target) {
    target_ = std::move(target);
    drain();
  }
  bool has_target() const { return static_cast<bool>(target_); }

  /// Changes the rate; it applies at once to what is queued. Deliveries already made count against
  /// the new rate as far as the log remembers them: every delivery of the last `per`, and at least
  /// the last `messages` ones, so lowering N or lengthening `per` is exact for windows straddling
  /// the change. Throws std::invalid_argument when `messages` is 0 or `per` is not positive.
  void set_rate(throttle_rate rate) {
    check(rate);
    rate_ = rate;
    drain();
  }
  const throttle_rate& rate() const { return rate_; }

  /// Queues `item` and delivers what the rate allows now (possibly `item` itself, synchronously).
  void push(T item) {
    queue_.push_back(std::move(item));
    drain();
  }

  /// Items waiting for the rate or for a target.
  std::size_t queued() const { return queue_.size(); }
  /// Items handed to a target so far.
  std::uint64_t delivered() const { return delivered_; }
  /// When the latest delivery happened, by the injected clock (inside a target: the current one).
  clock::time_point last_delivery() const { return log_.empty() ? clock::time_point() : log_.back(); }
  /// Timers scheduled so far: it does not grow while the queue is empty.
  std::uint64_t timers_scheduled() const { return timers_scheduled_; }
  /// True while a timer that will deliver is pending.
  bool timer_pending() const { return armed_; }

 private:
  static void check(const throttle_rate& rate) {
    if (rate.messages == 0) throw std::invalid_argument("throttle rate: messages must be at least 1");
    if (rate.per.count() <= 0)
      throw std::invalid_argument("throttle rate: per must be a positive duration, got " +
                                  std::to_string(rate.per.count()) + " ms");
  }

  /// Delivers while the rate allows; when it does not, arms one timer for the moment it will.
  void drain() {
    if (draining_) return;  // a target that pushes or changes the rate re-enters here
    draining_ = true;
    struct reset {
      bool& flag;
      ~reset() { flag = false; }
    } guard{draining_};
    while (!queue_.empty() && target_) {
      auto now = now_();
      forget_before(now);
      if (log_.size() >= rate_.messages && now - log_[log_.size() - rate_.messages] < rate_.per) {
        // The window ending now is full: the next delivery may happen once its oldest one leaves.
        arm(log_[log_.size() - rate_.messages] + rate_.per);
        return;
      }
      T item = std::move(queue_.front());
      queue_.pop_front();
      log_.push_back(now);
      ++delivered_;
      target_(std::move(item));
    }
  }

  /// Keeps the deliveries of the last `per`, and at least the last `messages` ones (N time points:
  /// enough to judge the next delivery, and to keep a later, longer `per` exact).
  void forget_before(clock::time_point now) {
    while (log_.size() > rate_.messages && now - log_.front() >= rate_.per) log_.pop_front();
  }

  void arm(clock::time_point due) {
    if (armed_ && armed_due_ <= due) return;  // the pending timer wakes early enough
    // A rate change may need an earlier wake-up: the later timer, when it fires, does nothing.
    armed_ = true;
    armed_due_ = due;
    auto id = ++timer_id_;
    ++timers_scheduled_;
    auto delay = std::chrono::ceil<std::chrono::milliseconds>(due - now_());
    if (delay.count() < 0) delay = std::chrono::milliseconds(0);
    schedule_(delay, [this, id, alive = std::weak_ptr<bool>(alive_)] {
      if (alive.expired() || id != timer_id_) return;
      armed_ = false;
      drain();
    });
  }

  now_fn now_;
  schedule_fn schedule_;
  throttle_rate rate_;
  target_fn target_;
  std::deque<T> queue_;
  std::deque<clock::time_point> log_;  ///< delivery times, oldest first
  bool draining_ = false;
  bool armed_ = false;
  clock::time_point armed_due_;
  std::uint64_t timer_id_ = 0;
  std::uint64_t timers_scheduled_ = 0;
  std::uint64_t delivered_ = 0;
  std::shared_ptr<bool> alive_;  ///< timers of a destroyed queue do nothing
};

/// A `throttle_queue` for use inside a worker: the steady clock, and timers through the worker's
/// `after`, so deliveries run on the worker's strand. Construct it in the worker's constructor
/// (`throttle_{*this, {10, 1000ms}}`); it must not outlive the worker.
template <class T>
class throttler : public throttle_queue<T> {
 public:
  throttler(worker& owner, throttle_rate rate)
      : throttle_queue<T>(
            rate, [] { return std::chrono::steady_clock::now(); },
            [ctx = owner.ctx_](std::chrono::milliseconds delay, std::function<void()> fn) {
              ctx->after(delay, std::move(fn));
            }) {}
};

}  // namespace dde
