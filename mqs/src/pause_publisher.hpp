#pragma once
// The enqueuer's half of pool-wide pauses: publishes each pause a host asked for to the
// governance fanout exchange, on a channel of its own, so a refused publish (the exchange was
// deleted: 404) closes only that channel. A pause is never kept for later: without a broker
// connection it is dropped (the hosts of this MQS were told already, and it would be stale).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "amqp_session.hpp"
#include "pause_broadcast.hpp"

namespace dde::mqs {

class pause_publisher {
 public:
  /// The enqueuer's channel for pauses (1-3 publish messages and declare queues).
  static constexpr std::uint16_t channel = 4;

  /// Thread-safe: queues `p` for the owner's next publish(); of two queued pauses of one topic,
  /// the one that ends later is kept.
  void submit(pause_broadcast p);
  /// On the owner's thread: publishes the queued pauses over `session`, or drops them when it is
  /// null. A result that lost the connection is for the owner to handle.
  amqp_session::result publish(amqp_session* session);
  /// A new connection: the channel is opened and the exchange declared at the next publish.
  void reset() { ready_ = false; }
  /// The broker closed the channel: it is opened again at the next publish.
  void on_channel_closed(const std::string& why);

 private:
  amqp_session::result prepare(amqp_session& session);

  std::mutex mutex_;
  std::map<std::string, pause_broadcast> queued_;  ///< by topic
  // Owned by the enqueuer thread.
  bool ready_ = false;    ///< the channel is open and the exchange declared
  bool failing_ = false;  ///< preparing failed last time (logged once until it works again)
};

}  // namespace dde::mqs
