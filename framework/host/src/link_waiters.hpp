#pragma once
// Those waiting for the isolate system's link to the MQS to come up (a fresh deploy waits for it
// before it answers), each with its own deadline: all hear it when the link is up or the top level
// stops, or each alone when its deadline passes first. Runs on the top level's strand.

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace dde::host {

class link_waiters {
 public:
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
  explicit link_waiters(const strand_type& strand) : strand_(strand) {}

  /// `fn` hears what answer() says, or `late()` once `timeout` passed first (`late` says why the
  /// link is not up; whatever it holds lives until then).
  void wait(std::chrono::milliseconds timeout, std::function<void(std::string)> fn,
            std::function<std::string()> late);
  /// Every waiter hears `error` ("" = the link is up) and is forgotten.
  void answer(const std::string& error);
  std::size_t size() const { return waiting_.size(); }

 private:
  struct waiter {
    std::function<void(std::string)> fn;
    std::shared_ptr<boost::asio::steady_timer> timer;
  };
  strand_type strand_;
  std::map<std::uint64_t, waiter> waiting_;
  std::uint64_t next_ = 0;
};

}  // namespace dde::host
