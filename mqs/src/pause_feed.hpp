#pragma once
// The pauses the MQS tells its hosts of: those a host of this MQS asked for, and those of other MQS
// processes, heard on a private queue bound to the governance exchange (server-named, exclusive,
// auto-delete, consumed without acks on a channel of the dequeuer's main connection, made again
// after a reconnect). A host is told of a pause of each topic it pulls, and, when it starts pulling
// a paused topic, of the pause still running (pause_board). Owned by the dequeuer's loop.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "amqp_session.hpp"
#include "dde/core/net/backoff.hpp"
#include "host_outboxes.hpp"
#include "pause_board.hpp"

namespace dde::mqs {

class pause_feed {
 public:
  using clock = pause_board::clock;
  /// `mqs_id`: this MQS process, whose own pauses coming back from the broker are skipped.
  pause_feed(std::string mqs_id, host_outboxes& hosts) : mqs_id_(std::move(mqs_id)), hosts_(hosts) {}

  /// Host `client` pulls `topic`: it hears the topic's pauses from now on, a running one at once.
  void listen(client_id client, const std::string& topic, clock::time_point now);
  void stop_listening(client_id client, const std::string& topic) { board_.stop_listening(client, topic); }
  /// The host is gone.
  void forget(client_id client) { board_.forget(client); }
  /// A pause of `topic` (a host of this MQS asked for it): told to every host that pulls it.
  void pause(const std::string& topic, std::chrono::milliseconds length, const std::string& reason,
             const std::string& origin, clock::time_point now);

  /// Consumes the governance exchange on `channel` of `session` through a private queue, under
  /// consumer `tag`.
  amqp_session::result consume(amqp_session& session, std::uint16_t channel, const std::string& tag);
  /// A message of the governance exchange: another MQS's pause, told to the hosts that pull its
  /// topic; our own coming back, or anything that is not a pause, changes nothing.
  void heard(const std::string& body, clock::time_point now);
  /// How long after a failed or lost pause consumer it is set up again (1 s, doubling to 30 s).
  net::backoff& retry() { return retry_; }

 private:
  void tell(const std::vector<pause_notice>& notices);

  std::string mqs_id_;
  host_outboxes& hosts_;
  pause_board board_;
  net::backoff retry_{std::chrono::milliseconds(1000), std::chrono::milliseconds(30000)};
  std::uint64_t ignored_ = 0;  ///< messages on the governance exchange that were not pauses
};

}  // namespace dde::mqs
