#pragma once
/// \file
/// How the MQS declares a topic's queue, by delivery mode (mqs/PROTOCOL.md "Rules").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dde/names.hpp"

namespace dde::mqs {

/// The arguments of one `queue.declare`.
struct queue_spec {
  std::string name;
  bool durable = false;
  bool quorum = false;                           ///< x-queue-type: quorum
  std::optional<std::int64_t> delivery_limit;    ///< x-delivery-limit
  std::optional<std::string> dead_letter_queue;  ///< x-dead-letter-exchange "" + this routing key
  std::optional<std::int64_t> expires_ms;        ///< x-expires
};

/// Attempts before a quorum queue dead-letters a message that keeps coming back.
constexpr std::int64_t delivery_limit = 20;
/// A reply queue unused this long is deleted by the broker.
constexpr std::int64_t reply_queue_expiry_ms = 60000;

/// The queue of `topic` for `mode`. A topic under `dde.dead.` is itself a dead-letter queue: durable
/// quorum, with no dead-lettering of its own.
queue_spec spec_for(std::string_view topic, delivery_mode mode);

/// The dead-letter queue to declare beside `topic`'s queue, if it has one.
std::optional<queue_spec> dead_letter_spec_for(std::string_view topic, delivery_mode mode);

}  // namespace dde::mqs
