#pragma once
/// \file
/// How the MQS declares a topic's queue, by delivery mode (mqs/PROTOCOL.md "Rules").

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dde/names.hpp"

namespace dde::mqs {

/// Where a RabbitMQ cluster puts the replicas and the leader of a new quorum queue.
struct quorum_placement {
  /// x-quorum-initial-group-size: replicas of a new quorum queue; 0: one on every node (the broker's
  /// default).
  std::uint32_t group_size = 0;
  /// x-queue-leader-locator: "balanced" puts a new queue's leader on the node that leads fewest (leaders
  /// spread over the cluster), "client-local" on the node the declaring connection is on.
  std::string leader_locator = "balanced";
};

/// The arguments of one `queue.declare`.
struct queue_spec {
  std::string name;
  bool durable = false;
  bool quorum = false;                           ///< x-queue-type: quorum
  quorum_placement placement;                    ///< with quorum only
  std::optional<std::int64_t> delivery_limit;    ///< x-delivery-limit
  std::optional<std::string> dead_letter_queue;  ///< x-dead-letter-exchange "" + this routing key
  std::optional<std::int64_t> expires_ms;        ///< x-expires
  std::optional<std::int64_t> message_ttl_ms;    ///< x-message-ttl
  /// x-dead-letter-strategy at-least-once (with x-overflow reject-publish, which it needs): the
  /// broker keeps a dead letter until the queue it goes to has confirmed it.
  bool dead_letter_at_least_once = false;
  /// x-single-active-consumer: of the consumers of every MQS, one at a time gets the queue's messages.
  bool single_active_consumer = false;
};

/// Attempts before a quorum queue dead-letters a message that keeps coming back.
constexpr std::int64_t delivery_limit = 20;
/// A reply queue unused this long is deleted by the broker.
constexpr std::int64_t reply_queue_expiry_ms = 60000;

/// The queue of `topic` for `mode`. A topic under `dde.dead.` is itself a dead-letter queue: durable
/// quorum, with no dead-lettering of its own. A delay queue (`dde.delay-<ms>.<topic>`, see
/// dde::delay_topic) is durable quorum with a message TTL of <ms>, dead-lettering at least once to
/// <topic>: what waits there survives a broker restart and comes back to <topic> in order. A lease
/// queue (lease_topic) likewise.
/// Quorum queues take `placement`.
queue_spec spec_for(std::string_view topic, delivery_mode mode, const quorum_placement& placement = {});

/// The lease queue of MQS `mqs_id` for at-least-once `topic`: `dde.lease-<ttl_ms>-<mqs_id>.<topic>`.
/// Durable quorum, message TTL <ttl_ms>, dead-lettering at least once to <topic>, deleted by the
/// broker once unused for 2 TTLs and a minute: a copy the MQS no longer holds (it died) is back in
/// <topic> within one TTL. See mqs/PROTOCOL.md "Leases".
std::string lease_topic(std::string_view mqs_id, std::int64_t ttl_ms, std::string_view topic);
struct lease_queue {
  std::int64_t ttl_ms = 0;
  std::string topic;
};
/// The TTL and pool topic of a lease queue's name; nullopt for any other name.
std::optional<lease_queue> parse_lease_topic(std::string_view name);

/// The queue of partition `index` of partitioned `topic`: `<topic>~<index>`, which is no topic name,
/// so no host pulls or enqueues to it but through its topic.
std::string partition_queue(std::string_view topic, std::uint32_t index);
/// How it is declared: as `topic`'s queue for `mode` (its dead letters go to the topic's dead-letter
/// queue), with a single active consumer, so that of several MQS processes one consumes it at a time.
queue_spec partition_spec(std::string_view topic, std::uint32_t index, delivery_mode mode,
                          const quorum_placement& placement = {});

/// The dead-letter queue to declare beside `topic`'s queue, if it has one.
std::optional<queue_spec> dead_letter_spec_for(std::string_view topic, delivery_mode mode,
                                               const quorum_placement& placement = {});

}  // namespace dde::mqs
