#pragma once
// The publishing connection's declaring channel: the queues a topic's messages need are declared
// there before its first publish (and again now and then: a reply queue that expired, or a queue
// someone deleted, comes back), and the hosts' `depth` questions are answered there (a passive
// declare). A refused declare closes only that channel, never a publishing one; it is reopened.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "amqp_session.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/net/ws.hpp"
#include "inbox.hpp"
#include "outgoing_message.hpp"

namespace dde::mqs {

/// A host asked how many messages wait in `topic` (answered with a `depth` record on `conn`).
struct depth_query {
  std::shared_ptr<net::ws_connection> conn;
  std::string topic;
};

class queue_admin {
 public:
  using clock = std::chrono::steady_clock;
  enum class outcome { declared, refused, connection_lost };

  queue_admin(std::uint16_t channel, quorum_placement quorum)
      : channel_(channel), quorum_(std::move(quorum)) {}

  /// Thread-safe: queue depths to ask the broker for.
  void ask(std::vector<depth_query>&& queries) { depths_.push(std::move(queries)); }
  /// Called (on any thread) when a question comes.
  void set_notify(std::function<void()> notify) { depths_.set_notify(std::move(notify)); }

  /// Declares what `msg`'s topic needs unless that was done lately. Refused: why, in `error`
  /// (logged); connection lost: the session's error.
  outcome ensure(amqp_session& session, const outgoing_message& msg, clock::time_point now,
                 std::string& error);
  /// Answers the questions asked since the last call, on `session` (none: not connected). The
  /// connection's error if it was lost meanwhile (the questions after that are answered so).
  std::optional<std::string> answer_depths(amqp_session* session);
  /// `msg`'s queues are declared again before its next publish (they may have gone).
  void forget(const outgoing_message& msg) {
    until_.erase(msg.partition ? partition_queue(msg.topic, *msg.partition) : msg.topic);
  }
  /// A new connection declares everything again.
  void forget_all() { until_.clear(); }

 private:
  std::uint16_t channel_;
  quorum_placement quorum_;
  inbox<depth_query> depths_;
  /// Queues declared (a topic's, or a partition's), until when that holds; queues found with other arguments.
  std::unordered_map<std::string, clock::time_point> until_;
  std::unordered_set<std::string> warned_;
};

}  // namespace dde::mqs
