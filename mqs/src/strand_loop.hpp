#pragma once
// A broker connection's owner (the dequeuers, the enqueuer) run on the MQS's io_context instead of a
// thread of its own: its turns run on a strand, one at a time, whenever something asked for one
// (a host's records, a broker socket readable or writable, a timer). The broker sockets are watched
// by the same reactor as the hosts': each through a dup of its fd, keyed by the session's serial, so a
// socket that rabbitmq-c closes and whose number comes back for another connection is never taken for
// it. A wait is started again in its handler, before the turn it asks for reads: data coming after
// that read completes the new wait (the reactor's edge-triggered events are not kept for a wait not
// yet started).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "exit_latch.hpp"

namespace boost::asio {
class io_context;
}

namespace dde::mqs {

class strand_loop {
 public:
  using clock = std::chrono::steady_clock;

  /// `turn` runs on the strand after each schedule() (once, however many asked before it started),
  /// until finish().
  strand_loop(boost::asio::io_context& io, std::function<void()> turn);
  ~strand_loop();
  strand_loop(const strand_loop&) = delete;
  strand_loop& operator=(const strand_loop&) = delete;

  /// Any thread: a turn runs soon.
  void schedule();
  /// In a turn: the next one runs by `at` at the latest.
  void wake_at(clock::time_point at);

  /// In a turn: whether the socket of session `serial` is watched.
  bool watching(std::uint64_t serial) const;
  /// In a turn: watches `fd`, the socket of session `serial`; `readable` runs on the strand each time
  /// it has data, then a turn is scheduled. False when it cannot be watched (no fd left to dup).
  bool watch(std::uint64_t serial, int fd, std::function<void()> readable = {});
  /// In a turn: a turn is scheduled once session `serial`'s socket (watched) can be written to.
  void await_writable(std::uint64_t serial);
  /// In a turn: ends the watches `gone` names (closing their dups; the sessions' fds stay theirs).
  void unwatch_if(const std::function<bool(std::uint64_t serial)>& gone);

  /// In a turn, or anywhere once io's threads have returned: no turn runs any more.
  void finish();
  bool finished() const;
  /// Set by finish(): stop() waits for it.
  exit_latch& done();
  /// Whether io's threads have returned (stop() then runs the last turn itself).
  bool io_stopped() const;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace dde::mqs
