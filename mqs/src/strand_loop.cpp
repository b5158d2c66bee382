#include "strand_loop.hpp"

#include <unistd.h>

#include <atomic>
#include <boost/asio/defer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <unordered_map>

namespace dde::mqs {

namespace asio = boost::asio;

struct strand_loop::impl : std::enable_shared_from_this<strand_loop::impl> {
  struct socket_watch {
    std::unique_ptr<asio::posix::stream_descriptor> socket;  ///< owns a dup of the session's fd
    std::function<void()> readable;
    bool writing = false;  ///< a wait for writable is started
  };

  impl(asio::io_context& io, std::function<void()> turn)
      : io(io), strand(asio::make_strand(io)), timer(strand), turn(std::move(turn)) {}

  asio::io_context& io;
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;
  std::function<void()> turn;
  clock::time_point timer_at = clock::time_point::max();
  bool timer_set = false;
  std::atomic<bool> scheduled{false};
  bool finished = false;
  exit_latch done;
  std::unordered_map<std::uint64_t, socket_watch> watches;  ///< by the session's serial

  void schedule() {
    if (scheduled.exchange(true)) return;
    asio::defer(strand, [self = shared_from_this()] { self->run_turn(); });
  }

  void run_turn() {
    scheduled = false;
    if (!finished) turn();
  }

  void wait_readable(std::uint64_t serial, socket_watch& w) {
    w.socket->async_wait(asio::posix::stream_descriptor::wait_read,
                         [self = shared_from_this(), serial](const boost::system::error_code& ec) {
                           if (ec || self->finished) return;
                           auto it = self->watches.find(serial);
                           if (it == self->watches.end()) return;
                           if (it->second.readable) it->second.readable();
                           self->wait_readable(serial, it->second);
                           self->schedule();
                         });
  }

  void wait_writable(std::uint64_t serial, socket_watch& w) {
    w.writing = true;
    w.socket->async_wait(asio::posix::stream_descriptor::wait_write,
                         [self = shared_from_this(), serial](const boost::system::error_code& ec) {
                           if (ec || self->finished) return;
                           auto it = self->watches.find(serial);
                           if (it == self->watches.end()) return;
                           it->second.writing = false;
                           self->schedule();
                         });
  }

  void set_timer(clock::time_point at) {
    if (timer_set && timer_at <= at) return;  // an earlier turn is due anyway; it arms again
    timer_set = true;
    timer_at = at;
    timer.expires_at(at);  // a wait already started ends with operation_aborted
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec || self->finished) return;
      self->timer_set = false;
      self->schedule();
    });
  }
};

strand_loop::strand_loop(asio::io_context& io, std::function<void()> turn)
    : impl_(std::make_shared<impl>(io, std::move(turn))) {}

strand_loop::~strand_loop() = default;

void strand_loop::schedule() { impl_->schedule(); }

void strand_loop::wake_at(clock::time_point at) { impl_->set_timer(at); }

bool strand_loop::watching(std::uint64_t serial) const { return impl_->watches.count(serial) > 0; }

bool strand_loop::watch(std::uint64_t serial, int fd, std::function<void()> readable) {
  int copy = ::dup(fd);
  if (copy < 0) return false;
  auto& w = impl_->watches[serial];
  w.socket = std::make_unique<asio::posix::stream_descriptor>(impl_->strand, copy);
  w.readable = std::move(readable);
  impl_->wait_readable(serial, w);
  return true;
}

void strand_loop::await_writable(std::uint64_t serial) {
  auto it = impl_->watches.find(serial);
  if (it != impl_->watches.end() && !it->second.writing) impl_->wait_writable(serial, it->second);
}

void strand_loop::unwatch_if(const std::function<bool(std::uint64_t)>& gone) {
  std::erase_if(impl_->watches, [&](const auto& w) { return gone(w.first); });
}

void strand_loop::finish() {
  impl_->finished = true;
  impl_->watches.clear();  // closes the dups
  impl_->timer.cancel();
  impl_->done.set();
}

bool strand_loop::finished() const { return impl_->finished; }

exit_latch& strand_loop::done() { return impl_->done; }

bool strand_loop::io_stopped() const { return impl_->io.stopped(); }

}  // namespace dde::mqs
