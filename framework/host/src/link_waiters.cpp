#include "link_waiters.hpp"

namespace dde::host {

void link_waiters::wait(std::chrono::milliseconds timeout, std::function<void(std::string)> fn,
                        std::function<std::string()> late) {
  auto id = next_++;
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, timeout);
  waiting_.emplace(id, waiter{std::move(fn), timer});
  timer->async_wait([this, id, late = std::move(late)](boost::system::error_code ec) {
    if (ec) return;  // answered (or destroyed) first
    auto it = waiting_.find(id);
    if (it == waiting_.end()) return;
    auto fn = std::move(it->second.fn);
    waiting_.erase(it);
    fn(late());
  });
}

void link_waiters::answer(const std::string& error) {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [id, w] : waiting) {
    w.timer->cancel();
    w.fn(error);
  }
}

}  // namespace dde::host
