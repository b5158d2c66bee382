// The dequeuer's own thread (start() rather than start(io)), which sleeps in poll() on the broker
// sockets and the inboxes' eventfds between turns, and the opener's (link_opener.hpp).

#include <poll.h>

#include <algorithm>

#include "dde/log.hpp"
#include "dequeuer.hpp"

namespace dde::mqs {

void dequeuer::start() {
  loop_.opener.start();
  loop_.thread.start("mqs-dequeuer", [this] { run(); });
}

void dequeuer::stop() {
  if (loop_.asio) {
    stop_asio_loop();
  } else if (!loop_.thread.stop([this] { loop_.commands.wake(); }))
    logger("mqs.dequeuer")->warn("the broker connection did not let go within 10 s: closed it");
  if (!loop_.opener.stop())
    logger("mqs.dequeuer")->warn("a consuming connection being opened did not let go within 10 s: closed it");
}

void dequeuer::run() {
  run_turns();
  finish_loop();
  loop_.thread.exited.set();
}

void dequeuer::run_turns() {
  for (;;) {
    // On an io_context the inboxes' eventfds are not written (their notify stands for them).
    if (loop_.asio) take_inboxes_next_turn();
    auto wake_at = turn();
    if (!wake_at) return;
    wait(*wake_at);
  }
}

bool dequeuer::counts(timer t) const {
  switch (t) {
    case timer::connect: return !main_.session;
    case timer::governance_retry: return main_.session && !main_.channel;
    case timer::idle_check:
    case timer::shrink: return !consumers_.empty();
    case timer::lease_check: return !consumers_.empty() && cfg_.lease.count() > 0;
    case timer::stop_grace: return false;  // the last turns alone wait for it
    case timer::sweep:
    case timer::count: break;
  }
  return true;
}

void dequeuer::wait(clock::time_point wake_at) {
  // poll() looks at every link: so does each turn on this thread.
  turn_.walk.turned();
  turn_.walk.everything();
  std::vector<pollfd> fds{{loop_.commands.fd(), POLLIN, 0}, {loop_.opener.fd(), POLLIN, 0}};
  std::vector<broker_link*> watched;
  auto watch = [&](broker_link& link) {
    link.readable = true;  // a link not watched (no connection yet) is read as soon as it has one
    if (!link.session) return;
    if (link.session->buffered()) wake_at = now();  // a frame is read without the socket
    fds.push_back({link.session->fd(), POLLIN, 0});
    watched.push_back(&link);
  };
  watch(main_);
  for (auto& [topic, c] : consumers_) watch(c.link);
  // Rounded up: a wake-up due in 0.4 ms waits 1 ms rather than polling without a timeout until then.
  int timeout_ms = int(
      std::clamp<long long>(std::chrono::ceil<std::chrono::milliseconds>(wake_at - now()).count(), 0, 1000));
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0) {  // EINTR: everything is read next turn
    take_inboxes_next_turn();
    return;
  }
  loop_.commands.saw(fds[0].revents != 0);
  loop_.opener.saw(fds[1].revents != 0);
  for (std::size_t i = 0; i < watched.size(); ++i) watched[i]->readable = fds[i + 2].revents != 0;
}

}  // namespace dde::mqs
