// The dequeuer's loop on the MQS's io_context rather than on a thread of its own. On its own thread
// the loop slept in poll() on the broker sockets and an eventfd: every batch a host sent (credit,
// acks) woke it through the eventfd, and every batch of deliveries it sent woke the WebSocket
// thread through Asio's reactor, two threads handing each batch to each other. Here its turns run
// on a strand of the io_context: the broker sockets are watched by the same reactor as the hosts'
// (a dup of each, so a socket that rabbitmq-c closes and whose number comes back for another
// connection is never mistaken for it), a host's records schedule a turn after the handler that
// read them, and the deliveries a turn sends go out from the same thread.

#include <cerrno>
#include <unordered_map>

#include "dde/log.hpp"
#include "dequeuer.hpp"
#include "strand_loop.hpp"

namespace dde::mqs {

struct dequeuer::asio_loop {
  asio_loop(dequeuer& d, boost::asio::io_context& io) : d(d), loop(io, [this] { run_turn(); }) {}

  dequeuer& d;
  strand_loop loop;

  void run_turn() {
    // Nobody polls the inbox's eventfds here: taking from them costs a lock, no syscall.
    d.take_inboxes_next_turn();
    auto wake_at = d.turn();
    if (!wake_at) return finish();
    arm(*wake_at);
  }

  void finish() {
    loop.unwatch_if([](std::uint64_t) { return true; });  // closes the dups (the sessions' fds stay theirs)
    d.finish_loop();
    loop.finish();  // last: stop() returns once it ran
  }

  /// The links with a session, by serial, so that finding the link of a socket costs no walk over
  /// every topic (an MQS may consume thousands).
  std::unordered_map<std::uint64_t, broker_link*> links;
  /// Which sessions `links` holds: their count and the sum of a 64-bit hash of their serials
  /// (serials are never reused: two different sets collide with odds of 2^-64).
  std::pair<std::size_t, std::uint64_t> census{~std::size_t(0), 0};

  broker_link* link_of(std::uint64_t serial) {
    auto it = links.find(serial);
    return it == links.end() ? nullptr : it->second;
  }

  static std::uint64_t mix(std::uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }

  /// Rebuilds `links` when the sessions changed since the last turn; false when they did not.
  bool index_links() {
    std::pair<std::size_t, std::uint64_t> now{0, 0};
    auto count = [&](const broker_link& l) {
      if (!l.session) return;
      ++now.first;
      now.second += mix(l.session->serial());
    };
    count(d.main_);
    for (auto& [topic, c] : d.consumers_) count(c.link);
    if (now == census) return false;
    census = now;
    links.clear();
    if (d.main_.session) links.emplace(d.main_.session->serial(), &d.main_);
    for (auto& [topic, c] : d.consumers_)
      if (c.link.session) links.emplace(c.link.session->serial(), &c.link);
    return true;
  }

  void readable(broker_link& link) {
    if (&link == &d.main_)
      link.readable = true;  // every turn looks at it
    else
      d.turn_.walk.ready(link);
  }

  /// After a turn: watches the sockets of the links that have one (and forgets those gone), and
  /// comes back by `wake_at` at the latest. A turn that did not visit every link looks only at those
  /// it read (link_walk.hpp).
  void arm(clock::time_point wake_at) {
    auto& walk = d.turn_.walk;
    const bool all = walk.all();
    bool again = false;
    // The watches of sessions gone (closed, or handed to the opener to retire) end first: each
    // closes its dup, which a new session's fd never is. Only a turn that visits every link can
    // have seen a session come or go.
    if (all && index_links())
      loop.unwatch_if([&](std::uint64_t serial) { return link_of(serial) == nullptr; });
    auto watch_link = [&](broker_link& link) {
      if (!link.session || link.session->fd() < 0) {
        link.readable = true;  // as the thread's loop: read as soon as it has a connection
        return;
      }
      const bool buffered = link.session->buffered();
      if (buffered) again = true;  // a frame is read without the socket
      auto serial = link.session->serial();
      if (loop.watching(serial)) {
        link.readable = buffered;  // else until its wait completes
        return;
      }
      if (!loop.watch(serial, link.session->fd(), [this, serial] {
            if (auto* l = link_of(serial)) readable(*l);
          })) {
        logger("mqs.dequeuer")->warn("cannot watch a broker socket (dup: {}): reading it every turn", errno);
        link.readable = true;
        again = true;
        return;
      }
      link.readable = true;  // what came before the watch
      again = true;
    };
    // A consuming link still to be read (bytes buffered, a socket just or not watched) is on the
    // next turn's list.
    auto look_at = [&](broker_link& link) {
      watch_link(link);
      walk.keep(link);
    };
    watch_link(d.main_);
    if (all) {
      for (auto& [topic, c] : d.consumers_) look_at(c.link);
    } else {
      for (auto* link : walk.read()) look_at(*link);
    }
    walk.turned();
    if (again) return loop.schedule();
    loop.wake_at(wake_at);
  }
};

void dequeuer::start(boost::asio::io_context& io) {
  loop_.opener.start();
  loop_.asio = std::make_shared<asio_loop>(*this, io);
  loop_.commands.set_notify([loop = &loop_.asio->loop] { loop->schedule(); });
  loop_.opener.set_notify([loop = &loop_.asio->loop] { loop->schedule(); });
  loop_.asio->loop.schedule();  // the first turn connects
}

void dequeuer::stop_asio_loop() {
  loop_.thread.stopping = true;
  auto& loop = loop_.asio->loop;
  if (loop.finished()) return;
  if (loop.io_stopped()) {
    // Its threads have returned (dde-mqs stops its io_context first): the last turns run here,
    // polling the broker sockets as the thread's loop does.
    loop.unwatch_if([](std::uint64_t) { return true; });
    run_turns();
    loop_.asio->finish();
    return;
  }
  loop.schedule();
  if (!loop.done().wait_or_shutdown(std::chrono::seconds(10), loop_.thread.socket_fd)) {
    logger("mqs.dequeuer")->warn("the broker connection did not let go within 10 s: closed it");
    loop.done().wait();
  }
}

}  // namespace dde::mqs
