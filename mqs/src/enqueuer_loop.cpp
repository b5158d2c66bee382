// How the enqueuer's loop runs: on a thread of its own (start()), or on the MQS's io_context
// (start(io)).
//
// Its own thread sleeps in poll() on the broker socket and the inbox's eventfd between turns; stop()
// of a loop on an io_context whose threads have returned runs its last turns the same way
// (run_turns).
//
// On the io_context: on its own thread the loop slept in poll() on the broker socket and an eventfd:
// every batch of messages a host sent woke it through the eventfd, and every batch of confirms it
// sent back woke the WebSocket thread through Asio's reactor. Here its turns run on a strand
// (strand_loop.hpp) and no write waits: the frames a full socket does not take stay in unsent_ until
// the reactor says it has room, so a broker that blocks publishers (a memory alarm) holds up no thread
// serving the hosts.

#include <poll.h>

#include <cerrno>

#include "dde/log.hpp"
#include "enqueuer.hpp"
#include "strand_loop.hpp"

namespace dde::mqs {

void enqueuer::start() {
  thread_.start("mqs-enqueuer", [this] { run(); });
}

void enqueuer::stop() {
  if (loop_) return stop_asio_loop();
  if (!thread_.stop([this] { inbox_.wake(); }))
    logger("mqs.enqueuer")->warn("the broker connection did not let go within 10 s: closed it");
}

void enqueuer::run() {
  run_turns();
  thread_.exited.set();
}

void enqueuer::run_turns() {
  // Every turn reads the socket: a turn may follow the last without a poll (wait 0) and poll's
  // answer is not kept.
  for (;;) {
    link_.readable = true;
    auto wait = turn();
    if (!wait) break;
    if (wait->count() == 0) continue;
    short events = short(POLLIN | (wants_write() ? POLLOUT : 0));
    pollfd fds[2] = {{inbox_.fd(), POLLIN, 0}, {link_.session ? link_.session->fd() : -1, events, 0}};
    ::poll(fds, link_.session ? 2 : 1, int(wait->count()));
  }
  finish_loop();
}

void enqueuer::start(boost::asio::io_context& io) {
  writer_.set_nonblocking();
  loop_ = std::make_shared<strand_loop>(io, [this] { asio_turn(); });
  inbox_.set_notify([loop = loop_.get()] { loop->schedule(); });
  admin_.set_notify([loop = loop_.get()] { loop->schedule(); });
  loop_->schedule();  // the first turn connects
}

void enqueuer::asio_turn() {
  auto wait = turn();
  if (!wait) {
    loop_->unwatch_if([](std::uint64_t) { return true; });  // closes the dup (the session's fd stays its)
    finish_loop();
    loop_->finish();  // last: stop() returns once it ran
    return;
  }
  auto& session = link_.session;
  loop_->unwatch_if([&](std::uint64_t serial) { return !session || session->serial() != serial; });
  if (session && session->fd() >= 0) {
    auto serial = session->serial();
    if (!loop_->watching(serial)) {
      link_.readable = true;  // what came before the watch, or every turn of a socket that cannot be watched
      if (loop_->watch(serial, session->fd(), [this] { link_.readable = true; })) return loop_->schedule();
      logger("mqs.enqueuer")->warn("cannot watch the broker socket (dup: {}): reading it every 10 ms", errno);
      wait = std::min(*wait, std::chrono::milliseconds(10));
    }
    if (wants_write()) loop_->await_writable(serial);
  }
  if (wait->count() == 0) return loop_->schedule();
  loop_->wake_at(strand_loop::clock::now() + *wait);
}

void enqueuer::stop_asio_loop() {
  thread_.stopping = true;
  if (loop_->finished()) return;
  if (loop_->io_stopped()) {
    // Its threads have returned (dde-mqs stops its io_context first): the last turns run here.
    loop_->unwatch_if([](std::uint64_t) { return true; });
    run_turns();
    loop_->finish();
    return;
  }
  loop_->schedule();
  if (!loop_->done().wait_or_shutdown(std::chrono::seconds(10), thread_.socket_fd)) {
    logger("mqs.enqueuer")->warn("the broker connection did not let go within 10 s: closed it");
    loop_->done().wait();
  }
}

}  // namespace dde::mqs
