// The enqueuer's own thread (start() rather than start(io)): it sleeps in poll() on the broker
// socket and the inbox's eventfd between turns. stop() of a loop on an io_context whose threads
// have returned runs its last turns the same way (run_turns).

#include <poll.h>

#include "dde/log.hpp"
#include "enqueuer.hpp"

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

}  // namespace dde::mqs
