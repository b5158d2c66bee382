#pragma once
// The two sides of an isolate system's MQS link, as interfaces: what a pool's router asks of the
// link (`mqs_link`, which the top level implements) and what the link hands to a pool (`topic_sink`,
// which the router implements). Neither knows the other's class, and the link holds its pools weakly:
// the controller owns the routers, routers share the link.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dde/envelope.hpp"
#include "dde/names.hpp"
#include "dde/protocol/mqs_props.hpp"

namespace dde::host {

/// A pool as its MQS link sees it. Called on the link's strand: post onward.
class topic_sink {
 public:
  virtual ~topic_sink() = default;
  /// A delivery of the pool's topic: `props` as the MQS gave them (all empty for none), `body` the AMQP body,
  /// `published_us` when the MQS first published it (µs since the epoch, its wall clock; 0: unknown).
  struct delivery {
    std::uint64_t tag = 0;
    bool redelivered = false;
    std::uint64_t published_us = 0;
    mqs::message_props props;
    std::string body;
  };
  /// The deliveries of one WebSocket message from the MQS for this pool, in order: one hop to the
  /// pool's strand for them all rather than one a message.
  virtual void deliver(std::uint64_t generation, std::vector<delivery> batch) = 0;
  /// One delivery.
  void deliver(std::uint64_t generation, std::uint64_t tag, bool redelivered, std::uint64_t published_us,
               mqs::message_props props, std::string body) {
    std::vector<delivery> one(1);
    one[0] = {tag, redelivered, published_us, std::move(props), std::move(body)};
    deliver(generation, std::move(one));
  }
  /// A reply to an `ask` one of the pool's workers made.
  virtual void deliver_reply(envelope e) = 0;
  /// The link is up again (a new generation): pull again.
  virtual void on_connected() = 0;
};

/// An isolate system's link to its MQS, as its pools use it. Thread-safe: each call posts to the
/// link's strand.
class mqs_link {
 public:
  /// A pause of a topic: start none of its messages for `ms` (from now); `origin` is
  /// `<mqs id>/<instance>` of the host that asked. Called on the link's strand: post onward.
  using pause_handler =
      std::function<void(std::chrono::milliseconds ms, const std::string& reason, const std::string& origin)>;
  /// What the MQS answered about a queue: its ready messages and consumers, or why not (`error`).
  using depth_handler =
      std::function<void(std::uint64_t messages, std::uint64_t consumers, std::string error)>;

  virtual ~mqs_link() = default;

  /// `props`: the record's AMQP properties as a JSON object ("" for none; see split_envelope).
  virtual void enqueue(std::string topic, delivery_mode mode, std::string props, std::string body) = 0;
  /// An at-least-once enqueue whose outcome `settled` hears on the link's strand: true once the broker
  /// confirmed it, false when the MQS refused it. It is sent again after a reconnect, like any
  /// at-least-once enqueue, and dies with the isolate system if that goes first.
  virtual void enqueue_then(std::string topic, std::string props, std::string body,
                            std::function<void(bool confirmed)> settled) = 0;
  /// `consumers`: the pool's workers that take messages (a broker consumer each); 0 leaves it as told.
  virtual void pull(const std::string& topic, delivery_mode mode, std::size_t credit,
                    std::uint32_t consumers = 0) = 0;
  /// `topic` is a partitioned pool's: its pulls ask for `count` partitions by body field `key`.
  virtual void partition(const std::string& topic, std::uint32_t count, const std::string& key) = 0;
  virtual void ack(std::uint64_t generation, std::uint64_t tag) = 0;
  virtual void nack(std::uint64_t generation, std::uint64_t tag, bool requeue) = 0;
  virtual void cancel(const std::string& topic) = 0;
  /// Asks every host consuming `topic` not to start its messages for `ms` (advisory, time-bound).
  virtual void pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason) = 0;
  /// Deliveries of `topic` go to `sink` from now on (held weakly: a sink gone is a pool gone).
  virtual void attach(const std::string& topic, std::weak_ptr<topic_sink> sink) = 0;
  /// Forgets the sink of `topic` and its pause handler.
  virtual void detach(const std::string& topic) = 0;
  /// Where the pauses of `topic` go (an empty handler removes it).
  virtual void set_pause_handler(const std::string& topic, pause_handler fn) = 0;
  /// Asks the MQS how many messages wait in `topic`'s queue; `fn` runs on the link's strand.
  virtual void queue_depth(const std::string& topic, depth_handler fn) = 0;
  /// Calls `fn` (on the link's strand) once the outbound window has room.
  virtual void when_writable(std::function<void()> fn) = 0;
  /// The isolate-system instance replies to an `ask` come back to.
  virtual const std::string& instance() const = 0;
};

}  // namespace dde::host
