#pragma once
// What reaches the dequeuer's loop through its inbox: a host's requests (read from its batch by the
// MQS service), and the answers of the helpers the loop hands work to (the enqueuer settling the
// MQS's own copies, the opener thread asking a topic's depth). One struct per request, one handler each.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "dispatcher.hpp"

namespace dde::mqs::dequeue {

/// A host pulls `credit` more messages of `topic`.
struct pull {
  std::shared_ptr<net::ws_connection> conn;
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  std::uint32_t credit = 0;
  std::uint32_t consumers = 0;   ///< the host's workers on the topic (0: not told)
  bool binary_deliver = false;   ///< the host reads binary `deliver` headers
  std::size_t record = 0;        ///< index in its batch, for an error record
  std::uint32_t partitions = 0;  ///< a partitioned pool's partitions, and its key
  std::string key{};
};
/// A host acks the deliveries `tags` (the MQS's delivery ids).
struct ack {
  std::shared_ptr<net::ws_connection> conn;
  std::vector<std::uint64_t> tags;
};
/// A host gives the deliveries `tags` back (`requeue`) or dead-letters them.
struct nack {
  std::shared_ptr<net::ws_connection> conn;
  std::vector<std::uint64_t> tags;
  bool requeue = true;
};
/// A host stops consuming `topic`.
struct cancel {
  std::shared_ptr<net::ws_connection> conn;
  std::string topic;
};
/// A host's connection closed.
struct disconnect {
  std::shared_ptr<net::ws_connection> conn;
};
/// A host paused `topic` (governance): no message of it starts anywhere for `ms`.
struct pause {
  std::string topic;
  std::chrono::milliseconds ms{0};
  std::string reason;
  std::string origin;  ///< "<mqs id>/<host instance>"
};
/// The broker confirmed or refused the lease copy of delivery `id`.
struct leased {
  std::uint64_t id = 0;
  bool confirmed = false;
};
/// The broker confirmed or refused the dead-lettered copy of the delivery at `ref`.
struct dead_lettered {
  broker_ref ref;
  bool confirmed = false;
};
/// The stall watch's question about `topic`, answered: messages ready in its queue.
struct depth {
  std::string topic;
  std::uint64_t ready = 0;
};

}  // namespace dde::mqs::dequeue

namespace dde::mqs {

using dequeue_command =
    std::variant<dequeue::pull, dequeue::ack, dequeue::nack, dequeue::cancel, dequeue::disconnect,
                 dequeue::pause, dequeue::leased, dequeue::dead_lettered, dequeue::depth>;

}  // namespace dde::mqs
