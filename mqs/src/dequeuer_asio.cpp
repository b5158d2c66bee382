// The dequeuer's loop on the MQS's io_context rather than on a thread of its own. On its own thread
// the loop slept in poll() on the broker sockets and an eventfd: every batch a host sent (credit,
// acks) woke it through the eventfd, and every batch of deliveries it sent woke the WebSocket
// thread through Asio's reactor, two threads handing each batch to each other. Here its turns run
// on a strand of the io_context: the broker sockets are watched by the same reactor as the hosts'
// (a dup of each, so a socket that rabbitmq-c closes and whose number comes back for another
// connection is never mistaken for it), a host's records schedule a turn after the handler that
// read them, and the deliveries a turn sends go out from the same thread.

#include <unistd.h>

#include <boost/asio/defer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "dde/log.hpp"
#include "dequeuer.hpp"

namespace dde::mqs {

struct dequeuer::asio_loop : std::enable_shared_from_this<dequeuer::asio_loop> {
  using socket_watch = std::unique_ptr<boost::asio::posix::stream_descriptor>;  ///< owns a dup of the fd

  asio_loop(dequeuer& d, boost::asio::io_context& io)
      : d(d), io(io), strand(boost::asio::make_strand(io)), timer(strand) {}

  dequeuer& d;
  boost::asio::io_context& io;
  boost::asio::strand<boost::asio::io_context::executor_type> strand;
  boost::asio::steady_timer timer;
  clock::time_point timer_at = clock::time_point::max();
  bool timer_set = false;
  std::atomic<bool> scheduled{false};
  bool finished = false;  ///< the last turn ran (on the strand, or inline once io stopped)
  exit_latch done;
  std::unordered_map<std::uint64_t, socket_watch> watches;  ///< by the session's serial

  /// Any thread: a turn runs soon (once, however many ask before it starts).
  void schedule() {
    if (scheduled.exchange(true)) return;
    boost::asio::defer(strand, [self = shared_from_this()] { self->run_turn(); });
  }

  void run_turn() {
    scheduled = false;
    if (finished) return;
    // Nobody polls the inbox's eventfds here: taking from them costs a lock, no syscall.
    d.inbox_ready_ = d.opened_ready_ = true;
    auto wake_at = d.turn();
    if (!wake_at) return finish();
    arm(*wake_at);
  }

  void finish() {
    finished = true;
    watches.clear();  // closes the dups (the sessions' own fds stay with them)
    timer.cancel();
    d.finish_loop();
    done.set();
  }

  broker_link* link_of(std::uint64_t serial) {
    if (d.main_.session && d.main_.session->serial() == serial) return &d.main_;
    for (auto& [topic, c] : d.consumers_)
      if (c.link.session && c.link.session->serial() == serial) return &c.link;
    return nullptr;
  }

  /// The socket's wait is started again before the turn it asks for reads it: data coming after
  /// that read completes the new wait (the reactor's edge-triggered events are not kept for a wait
  /// not yet started).
  void wait_readable(std::uint64_t serial, boost::asio::posix::stream_descriptor& socket) {
    socket.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [self = shared_from_this(), serial](const boost::system::error_code& ec) {
                           if (ec || self->finished) return;
                           auto it = self->watches.find(serial);
                           auto* link = self->link_of(serial);
                           if (it == self->watches.end() || !link) return;
                           link->readable = true;
                           self->wait_readable(serial, *it->second);
                           self->schedule();
                         });
  }

  /// After a turn: watches the sockets of the links that have one (and forgets those gone), and
  /// comes back by `wake_at` at the latest.
  void arm(clock::time_point wake_at) {
    bool again = false;
    // The watches of sessions gone (closed, or handed to the opener to retire) end first: each
    // closes its dup, which a new session's fd never is.
    std::erase_if(watches, [&](const auto& w) { return link_of(w.first) == nullptr; });
    auto watch_link = [&](broker_link& link) {
      if (!link.session || link.session->fd() < 0) {
        link.readable = true;  // as the thread's loop: read as soon as it has a connection
        return;
      }
      if (link.session->buffered()) again = true;  // a frame is read without the socket
      auto serial = link.session->serial();
      if (watches.count(serial)) {
        link.readable = false;  // until its wait completes
        return;
      }
      int fd = ::dup(link.session->fd());
      if (fd < 0) {
        logger("mqs.dequeuer")->warn("cannot watch a broker socket (dup: {}): reading it every turn", errno);
        link.readable = true;
        again = true;
        return;
      }
      auto& w = watches[serial];
      w = std::make_unique<boost::asio::posix::stream_descriptor>(strand, fd);
      wait_readable(serial, *w);
      link.readable = true;  // what came before the watch
      again = true;
    };
    watch_link(d.main_);
    for (auto& [topic, c] : d.consumers_) watch_link(c.link);
    if (again) return schedule();
    set_timer(wake_at);
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

void dequeuer::start(boost::asio::io_context& io) {
  start_opener();
  asio_ = std::make_shared<asio_loop>(*this, io);
  inbox_.set_notify([loop = asio_.get()] { loop->schedule(); });
  opened_.set_notify([loop = asio_.get()] { loop->schedule(); });
  asio_->schedule();  // the first turn connects
}

void dequeuer::stop_asio_loop() {
  thread_.stopping = true;
  auto& loop = *asio_;
  if (loop.io.stopped()) {
    // Its threads have returned (dde-mqs stops its io_context first): the last turn runs here.
    loop.run_turn();
    return;
  }
  loop.schedule();
  if (!loop.done.wait_or_shutdown(std::chrono::seconds(10), thread_.socket_fd)) {
    logger("mqs.dequeuer")->warn("the broker connection did not let go within 10 s: closed it");
    loop.done.wait();
  }
}

}  // namespace dde::mqs
