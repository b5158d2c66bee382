#include "clock.hpp"

#include <boost/asio/steady_timer.hpp>
#include <cstdint>

namespace dde::host {
namespace {

class asio_timer final : public timer {
 public:
  explicit asio_timer(const strand_type& strand) : timer_(strand) {}
  ~asio_timer() override { timer_.cancel(); }
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    timer_.expires_after(delay);  // cancels the wait before, whose handler sees operation_aborted
    // A handler already queued when the timer is re-armed, cancelled or destroyed would still run
    // with success: the generation it was armed in tells it not to.
    timer_.async_wait([fn = std::move(fn), armed = std::weak_ptr<std::uint64_t>(generation_),
                       mine = ++*generation_](boost::system::error_code ec) {
      auto now = armed.lock();
      if (!ec && now && *now == mine) fn();
    });
  }
  void cancel() override {
    ++*generation_;
    timer_.cancel();
  }

 private:
  boost::asio::steady_timer timer_;
  std::shared_ptr<std::uint64_t> generation_ = std::make_shared<std::uint64_t>(0);
};

class steady final : public clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  std::unique_ptr<timer> make_timer(const strand_type& strand) override {
    return std::make_unique<asio_timer>(strand);
  }
};

}  // namespace

std::shared_ptr<clock> real_clock() {
  static auto c = std::make_shared<steady>();
  return c;
}

}  // namespace dde::host
