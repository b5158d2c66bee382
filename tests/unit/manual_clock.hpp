#pragma once
// A clock for deterministic tests of the host: time moves only when the test calls advance(), which
// posts each timer that came due to its strand (in deadline order) for the test's io_context to run.

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "clock.hpp"

namespace dde::host::testing {

class manual_clock : public clock, public std::enable_shared_from_this<manual_clock> {
 public:
  time_point now() const override {
    std::lock_guard lock(mutex_);
    return now_;
  }

  /// Starts at 2026-09-21 and moves with advance(), or by move_wall() alone (a skewed clock).
  std::chrono::system_clock::time_point wall_now() const override {
    std::lock_guard lock(mutex_);
    return wall_;
  }
  void move_wall(std::chrono::microseconds d) {
    std::lock_guard lock(mutex_);
    wall_ += d;
  }

  std::unique_ptr<timer> make_timer(const strand_type& strand) override {
    return std::make_unique<manual_timer>(shared_from_this(), strand);
  }

  /// Moves time on by `d`; every timer due by then is posted to its strand.
  void advance(std::chrono::milliseconds d) {
    std::vector<std::pair<strand_type, std::function<void()>>> due;
    {
      std::lock_guard lock(mutex_);
      now_ += d;
      wall_ += d;
      while (!pending_.empty() && pending_.begin()->first.first <= now_) {
        auto it = pending_.begin();
        due.emplace_back(it->second.strand, std::move(it->second.fn));
        pending_.erase(it);
      }
    }
    for (auto& [strand, fn] : due) boost::asio::post(strand, std::move(fn));
  }

  /// Drops every timer waiting. A router holds its clock and a waiting call holds its router: a test
  /// ends with this, or the two keep each other alive.
  void clear() {
    std::map<key, entry> dropped;
    {
      std::lock_guard lock(mutex_);
      dropped.swap(pending_);
    }
  }

  /// Timers waiting.
  std::size_t pending() const {
    std::lock_guard lock(mutex_);
    return pending_.size();
  }

 private:
  using key = std::pair<time_point, std::uint64_t>;  ///< deadline, then the order they were set in
  struct entry {
    strand_type strand;
    std::function<void()> fn;
  };

  class manual_timer : public timer {
   public:
    manual_timer(std::shared_ptr<manual_clock> c, strand_type strand)
        : clock_(c), strand_(std::move(strand)) {}
    ~manual_timer() override { cancel(); }
    void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
      cancel();
      auto clock_ = this->clock_.lock();
      if (!clock_) return;  // the test is over
      std::lock_guard lock(clock_->mutex_);
      key_ = key{clock_->now_ + delay, clock_->next_++};
      // As the real timer: once due and posted, it still does not run after a cancel or a new after().
      auto guarded = [fn = std::move(fn), armed = std::weak_ptr<std::uint64_t>(generation_),
                      mine = *generation_] {
        auto now = armed.lock();
        if (now && *now == mine) fn();
      };
      clock_->pending_.emplace(*key_, entry{strand_, std::move(guarded)});
    }
    void cancel() override {
      ++*generation_;
      auto clock_ = this->clock_.lock();
      if (!clock_) return;
      std::lock_guard lock(clock_->mutex_);
      if (key_) clock_->pending_.erase(*key_);
      key_.reset();
    }

   private:
    /// Weakly: pending calls hold their router, which holds its timers; a strong reference back would
    /// keep both alive after the test.
    std::weak_ptr<manual_clock> clock_;
    strand_type strand_;
    std::optional<key> key_;
    std::shared_ptr<std::uint64_t> generation_ = std::make_shared<std::uint64_t>(0);
  };

  mutable std::mutex mutex_;
  time_point now_{std::chrono::hours(1)};
  std::chrono::system_clock::time_point wall_{std::chrono::seconds(1'790'000'000)};
  std::uint64_t next_ = 0;
  std::map<key, entry> pending_;
};

/// An io_context, a strand on it and a manual clock, for a host component's tests: advance() moves
/// time on and runs what came due before it returns.
struct manual_time {
  boost::asio::io_context io;
  strand_type strand = boost::asio::make_strand(io);
  std::shared_ptr<manual_clock> clock = std::make_shared<manual_clock>();
  void advance(std::chrono::milliseconds d) {
    clock->advance(d);
    io.restart();
    io.run();
  }
};

}  // namespace dde::host::testing
