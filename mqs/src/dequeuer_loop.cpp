// How the dequeuer's loop runs: what each turn does, when the next one comes, and where it runs: on
// a thread of its own (start()), or on the MQS's io_context (start(io)). Links are opened on the
// opener's thread either way (link_opener.hpp).
//
// Its own thread sleeps in poll() on the broker sockets and the inboxes' eventfds between turns.
//
// On the io_context: on its own thread the loop slept in poll() on the broker sockets and an
// eventfd: every batch a host sent (credit, acks) woke it through the eventfd, and every batch of
// deliveries it sent woke the WebSocket thread through Asio's reactor, two threads handing each batch
// to each other. Here its turns run on a strand of the io_context: the broker sockets are watched by
// the same reactor as the hosts' (a dup of each, so a socket that rabbitmq-c closes and whose number
// comes back for another connection is never mistaken for it), a host's records schedule a turn
// after the handler that read them, and the deliveries a turn sends go out from the same thread.

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "dde/log.hpp"
#include "dequeuer.hpp"
#include "strand_loop.hpp"

namespace dde::mqs {
namespace {

constexpr auto idle_check_period = std::chrono::milliseconds(250);
constexpr auto blocked_poll = std::chrono::milliseconds(10);
constexpr auto sweep_period = std::chrono::seconds(1);
// How long a stopping dequeuer waits for the lease copies it awaits (mqs/PROTOCOL.md "Leases").
constexpr auto stop_grace = std::chrono::seconds(2);

}  // namespace

void dequeuer::finish_loop() {
  loop_.thread.socket_fd = -1;
  consumers_.clear();  // each closes its connection: what it had buffered goes back to its queue
  main_.session.reset();
}

std::optional<dequeuer::clock::time_point> dequeuer::turn() {
  // One last turn after stop(): what hosts sent (acks above all) reaches the broker first.
  bool last = loop_.thread.stopping;
  auto t = now();
  turn_.now = t;
  auto& walk = turn_.walk;
  if (last) walk.everything();
  if (!main_.session && !last && timers_.due(timer::connect, t)) connect();
  for (auto& cmd : loop_.commands.take_seen()) std::visit([&](auto& c) { handle(c, t); }, cmd);
  if (timers_.due(timer::sweep, t)) sweep(t, last);
  read_links();
  if (main_.usable()) retry_governance(t);
  if (main_.usable() && !last && (walk.all() || t >= walk.retry_due())) {
    walk.everything();  // a topic may plan its link
    retry_consumers(t);
  }
  for (auto& plan : loop_.opener.take()) {
    walk.everything();
    adopt(*plan);
  }
  if (main_.usable() && !last && timers_.due(timer::shrink, t))
    timers_.set(timer::shrink, shrink_quiet_consumers(t));
  if (dispatcher_.blocked()) dispatcher_.retry_blocked();
  if (timers_.due(timer::idle_check, t)) {
    dispatcher_.expire_idle(t);
    timers_.clear(timer::idle_check);
  }
  // Stopping, no lease is renewed (the enqueuer that would publish the copy has stopped).
  if (cfg_.lease.count() > 0 && !last && timers_.due(timer::lease_check, t))
    timers_.set(timer::lease_check, dispatcher_.renew_leases(t));
  // The last turns read on while a lease copy is on its way (bounded): left in the lease queue, the
  // copy of a job the host acked would come back when its TTL runs out, a duplicate. Then each held
  // copy goes back to its topic at once rather than after its TTL.
  bool awaiting = false;
  if (last) {
    if (timers_.at(timer::stop_grace) == timers_.never) timers_.set(timer::stop_grace, t + stop_grace);
    awaiting = !timers_.due(timer::stop_grace, t) && dispatcher_.renewing() > 0 && !consumers_.empty();
    if (!awaiting) dispatcher_.hand_back_copies();
  }
  const auto acks_due = flush(last);
  own_messages_.flush();
  if (!main_.failed.empty()) connection_lost();
  if (walk.all())
    for (auto& [topic, c] : consumers_)
      if (!c.link.failed.empty()) link_lost(topic, c);
  // Idle topics are looked for only while one may go idle (without credit), not at every period.
  if (dispatcher_.watching_idle()) timers_.sooner(timer::idle_check, t + idle_check_period);
  if (last) {
    if (!awaiting) return std::nullopt;
    return std::min(timers_.at(timer::stop_grace), timers_.at(timer::sweep));
  }
  return wake_time(acks_due);
}

void dequeuer::read_links() {
  if (main_.worth_reading()) read_frames(main_);
  auto& walk = turn_.walk;
  if (const auto& listed = walk.take_ready(); !walk.all()) {
    for (auto* link : listed)
      if (link->worth_reading()) read_frames(*link);
    return;
  }
  for (auto& [topic, c] : consumers_)
    if (c.link.worth_reading()) read_frames(c.link);
}

dequeuer::clock::time_point dequeuer::wake_time(clock::time_point acks_due) {
  auto wake_at = timers_.next([this](timer k) { return counts(k); });
  auto& walk = turn_.walk;
  if (walk.all()) {
    auto retry_due = clock::time_point::max();
    for (auto& [topic, c] : consumers_)
      if (!c.link.channel && !c.opening) retry_due = std::min(retry_due, c.retry_at);
    walk.set_retry_due(retry_due);
  }
  if (main_.session) wake_at = std::min(wake_at, walk.retry_due());
  // A host's send queue has no event when it drains: look again shortly.
  if (dispatcher_.blocked()) wake_at = std::min(wake_at, now() + blocked_poll);
  return std::min(wake_at, acks_due);
}

void dequeuer::sweep(clock::time_point now, bool last) {
  // Links are read now and then whatever poll said: rabbitmq-c sends and checks heartbeats when it
  // reads, so a broker gone silent is noticed, and ours go out. rabbitmq-c sends ours at the first
  // read a heartbeat after the last frame it sent, and gives up on a broker silent for two; the
  // broker sends its own every half heartbeat (each wakes the link's read) and gives up on us after
  // about two silent heartbeats. So the main link is read every sweep, and a topic's once every half
  // heartbeat (15 s by default): ours go out at most one and a half heartbeats apart, a silent
  // broker is noticed within two and a half, and a thousand idle topics cost 67 reads a second.
  main_.readable = true;
  turn_.walk.everything();
  const std::uint64_t slices = std::max<std::uint64_t>(cfg_.heartbeat_s / 2, 1);
  std::uint64_t i = 0;
  for (auto& [topic, c] : consumers_)
    if (i++ % slices == turn_.sweeps % slices) c.link.readable = true;
  ++turn_.sweeps;
  timers_.set(timer::sweep, now + sweep_period);
  if (!last) check_stalls(now);
}

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
