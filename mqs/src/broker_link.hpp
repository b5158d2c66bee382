#pragma once
// One consuming AMQP connection of the dequeuer and the one channel it consumes on. Each topic
// gets a link of its own, so a connection-level error on one (RabbitMQ 3.10 answers a
// basic.consume on a quorum queue still electing its leader with 541 INTERNAL_ERROR, which
// closes the whole connection) costs only that topic, never the deliveries of the others.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "ack_batcher.hpp"
#include "amqp_session.hpp"

namespace dde::mqs {

struct broker_link : ack_sink {
  std::unique_ptr<amqp_session> session;
  std::string failed;         ///< set when an operation failed: the connection is to be dropped
  bool went_silent = false;   ///< it failed because the broker sent nothing for two heartbeats
  std::uint16_t channel = 0;  ///< the channel consumed on, 0 while none
  std::uint64_t epoch = 0;    ///< names that channel's consumer (the dequeuer's channel table key)
  /// The last poll saw the socket readable (or has not watched it yet): only then is it read, so a
  /// turn of the loop costs no recv on the links that have nothing.
  bool readable = true;
  /// Counts this link's failures with its owner's others (link_walk), when set.
  std::uint64_t* failure_count = nullptr;

  bool usable() const { return session && failed.empty(); }
  /// Whether a read may find a frame: the socket was readable, or rabbitmq-c holds bytes already.
  bool worth_reading() const { return usable() && (readable || session->buffered()); }
  /// The connection is to be dropped, for this reason.
  void fail(std::string why) {
    failed = std::move(why);
    if (failure_count) ++*failure_count;
  }
  /// Records `r`'s error when it lost the connection; true then.
  bool lost(const amqp_session::result& r) {
    if (r.connection_lost()) fail(r.error);
    return r.connection_lost();
  }

  void send_ack(std::uint16_t ch, std::uint64_t tag, bool multiple) override {
    if (!usable()) return;
    if (auto error = session->ack(ch, tag, multiple); !error.empty()) fail(std::move(error));
  }
  void send_reject(std::uint16_t ch, std::uint64_t tag, bool requeue) override {
    if (!usable()) return;
    if (auto error = session->reject(ch, tag, requeue); !error.empty()) fail(std::move(error));
  }
  /// Drops the connection without a polite close (it is broken).
  void reset_broken() {
    if (session) session->mark_broken();
    session.reset();
    failed.clear();
    went_silent = false;
    channel = 0;
    epoch = 0;
  }
};

}  // namespace dde::mqs
