// The dequeuers' threads: the opener, where links are opened and closed (a handful of broker round
// trips each), and, with start() rather than start(io), the loop's own thread, which sleeps in
// poll() on the broker sockets and the inboxes' eventfds between turns.

#include <poll.h>

#include <algorithm>

#include "dde/log.hpp"
#include "dequeuer.hpp"

namespace dde::mqs {

void dequeuer::start() {
  start_opener();
  thread_.start("mqs-dequeuer", [this] { run(); });
}

void dequeuer::start_opener() {
  if (offload_) return;  // a test opens links where it likes (set_opener)
  offload_ = [this](std::function<void()> job) {
    std::vector<std::function<void()>> jobs;
    jobs.push_back(std::move(job));
    opener_jobs_.push(std::move(jobs));
  };
  opener_thread_.start("mqs-opener", [this] { run_opener(); });
}

void dequeuer::stop() {
  if (asio_) {
    stop_asio_loop();
  } else if (!thread_.stop([this] { inbox_.wake(); }))
    logger("mqs.dequeuer")->warn("the broker connection did not let go within 10 s: closed it");
  if (!opener_thread_.stop([this] { opener_jobs_.wake(); }))
    logger("mqs.dequeuer")->warn("a consuming connection being opened did not let go within 10 s: closed it");
}

void dequeuer::run_opener() {
  while (!opener_thread_.stopping) {
    pollfd fd{opener_jobs_.fd(), POLLIN, 0};
    ::poll(&fd, 1, -1);
    for (auto& job : opener_jobs_.take())
      if (!opener_thread_.stopping) job();  // else dropped: its plan, unopened, goes with it
  }
  opener_thread_.exited.set();
}

void dequeuer::run() {
  run_turns();
  finish_loop();
  thread_.exited.set();
}

void dequeuer::run_turns() {
  for (;;) {
    // On an io_context the inboxes' eventfds are not written (their notify stands for them).
    if (asio_) inbox_ready_ = opened_ready_ = true;
    auto wake_at = turn();
    if (!wake_at) return;
    wait(*wake_at);
  }
}

void dequeuer::wait(clock::time_point wake_at) {
  std::vector<pollfd> fds{{inbox_.fd(), POLLIN, 0}, {opened_.fd(), POLLIN, 0}};
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
    inbox_ready_ = opened_ready_ = true;
    return;
  }
  inbox_ready_ = fds[0].revents != 0;
  opened_ready_ = fds[1].revents != 0;
  for (std::size_t i = 0; i < watched.size(); ++i) watched[i]->readable = fds[i + 2].revents != 0;
}

}  // namespace dde::mqs
