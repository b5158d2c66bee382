#pragma once
/// \file
/// Who hears the pauses of each topic (the hosts that pull it), and the pauses still running, so
/// a host that starts pulling a paused topic is told at once. No AMQP, no sockets: the dequeuer
/// thread owns one and sends the notices it produces.

#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dispatcher.hpp"

namespace dde::mqs {

/// A `pause` record to send to one host.
struct pause_notice {
  client_id client = 0;
  std::string topic;
  std::chrono::milliseconds remaining{0};
  std::string reason;
  std::string origin;
};

class pause_board {
 public:
  using clock = std::chrono::steady_clock;

  /// Remembers at most `max_running` running pauses (expired ones make room first); beyond that
  /// a pause is still told to the hosts pulling its topic, but not to hosts that pull it later.
  explicit pause_board(std::size_t max_running = 10000) : max_running_(max_running) {}

  /// `client` pulls `topic`. On its first pull of it, a running pause of the topic is told to it.
  void listen(client_id client, const std::string& topic, clock::time_point now,
              std::vector<pause_notice>& out);
  /// `client` cancelled `topic`.
  void stop_listening(client_id client, const std::string& topic);
  /// `client` is gone.
  void forget(client_id client);

  /// A pause of `topic` for `length` from `now`, told to every host that pulls the topic, unless a
  /// running pause of it lasts at least as long (they were told of that one). True when told.
  bool pause(const std::string& topic, std::chrono::milliseconds length, const std::string& reason,
             const std::string& origin, clock::time_point now, std::vector<pause_notice>& out);

  // Introspection, for tests.
  std::size_t listeners(const std::string& topic) const;
  std::size_t remembered() const { return running_.size(); }

 private:
  struct running_pause {
    clock::time_point until;
    std::string reason;
    std::string origin;
  };
  void drop_expired(clock::time_point now);

  std::size_t max_running_;
  std::unordered_map<std::string, std::set<client_id>> listeners_;  ///< ordered: notices in a stable order
  std::unordered_map<client_id, std::set<std::string>> topics_of_;
  std::unordered_map<std::string, running_pause> running_;
};

}  // namespace dde::mqs
