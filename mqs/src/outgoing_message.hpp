#pragma once
// A message for the enqueuer to publish: a host's enqueue, or one of the MQS's own.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {

/// One message a host enqueued.
struct outgoing_message {
  std::shared_ptr<net::ws_connection> conn;  ///< where its confirm or reject goes
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  std::uint64_t seq = 0;  ///< the host's number (at-least-once)
  std::string body;
  message_props props;
  /// The MQS's own message (a lease copy, a dead letter; no `conn`): called on the enqueuer's
  /// thread with true once the broker confirmed it, false if it was refused.
  std::function<void(bool)> settled;
  /// A partitioned topic's message: the partition its key picked (it goes to that partition's queue).
  std::optional<std::uint32_t> partition{};
};

}  // namespace dde::mqs
