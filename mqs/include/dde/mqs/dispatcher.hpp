#pragma once
/// \file
/// The dequeuing bookkeeping of the MQS, without any AMQP: which host has credit on which topic,
/// round-robin among them, the MQS delivery tags and the broker deliveries they stand for,
/// requeueing on disconnect or cancel, idle topics. One thread owns it (the dequeuer thread).

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dde/protocol/mqs_props.hpp"
#include "dde/names.hpp"

namespace dde::mqs {

/// A host connection (`ws_connection::id`).
using client_id = std::uint64_t;

/// A delivery as the broker knows it. `epoch` names one opened channel: refs of a channel that
/// closed (or of a connection that dropped) are void and the broker side ignores them.
struct broker_ref {
  std::uint64_t epoch = 0;
  std::uint16_t channel = 0;
  std::uint64_t tag = 0;
  bool operator==(const broker_ref&) const = default;
};

/// What the dispatcher asks of the broker side and of the hosts.
class dispatcher_port {
 public:
  virtual ~dispatcher_port() = default;
  /// Starts consuming `topic` (first pull); an error text when that is refused at once.
  virtual std::string start_consumer(const std::string& topic, delivery_mode mode) = 0;
  /// Stops consuming `topic` (idle); its unacknowledged deliveries go back to the queue.
  virtual void stop_consumer(const std::string& topic) = 0;
  /// `topic` is consumed by `consumers` (at least 1; each host that pulls it counts its workers, or
  /// 1): the broker side holds that many broker consumers of its queue, each with the MQS's prefetch,
  /// so that the prefetch is per consumer (as for raw AMQP clients) and not per MQS.
  virtual void set_consumers(const std::string& topic, std::uint32_t consumers) {
    (void)topic;
    (void)consumers;
  }
  virtual void ack(const broker_ref& ref) = 0;
  virtual void reject(const broker_ref& ref, bool requeue) = 0;
  /// Hands a message to a host.
  virtual void deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
                       std::string&& body, const message_props& props) = 0;
  /// False while a host's send queue is full (it does not read its socket): deliveries wait in
  /// the MQS, bounded by the prefetch, and the rest in the broker, until `retry_blocked`.
  virtual bool can_deliver(client_id) { return true; }
};

class dispatcher {
 public:
  using clock = std::chrono::steady_clock;

  dispatcher(dispatcher_port& port, std::chrono::milliseconds idle_timeout)
      : port_(port), idle_timeout_(idle_timeout) {}

  /// `client` can take `credit` more messages of `topic`, and consumes it with `consumers` workers
  /// (0: as it last said, or 1). An error text when refused.
  std::string pull(client_id client, const std::string& topic, delivery_mode mode, std::uint32_t credit,
                   clock::time_point now, std::uint32_t consumers = 0);
  /// The host is done with these deliveries (at-least-once: now acked to the broker).
  /// Unknown tags, tags of another host and tags made void by a reconnect are ignored.
  void ack(client_id client, const std::vector<std::uint64_t>& tags, clock::time_point now);
  /// Gives deliveries back (requeue) or drops/dead-letters them.
  void nack(client_id client, const std::vector<std::uint64_t>& tags, bool requeue, clock::time_point now);
  /// `client` stops pulling `topic`: its credit goes and its unacked deliveries are requeued.
  void cancel(client_id client, const std::string& topic, clock::time_point now);
  /// `client` is gone: the same for every topic.
  void disconnect(client_id client, clock::time_point now);

  /// A message arrived from the broker for `topic`.
  void on_delivery(const std::string& topic, const broker_ref& ref, bool redelivered, std::string body,
                   message_props props = {});
  /// The consumer of `topic` died (channel closed): its deliveries are void (the broker requeues them).
  void on_consumer_lost(const std::string& topic);
  /// The broker connection dropped: every delivery is void.
  void on_broker_lost();

  /// Hands over what waited for hosts whose send queues were full; false when some still wait.
  bool retry_blocked();
  /// True when a delivery waits for a host whose send queue is full.
  bool blocked() const { return blocked_; }

  /// Closes topics idle for the idle timeout: no credit, nothing unacked, no pull meanwhile.
  void expire_idle(clock::time_point now);

  // Introspection, for tests and statistics.
  bool has_topic(const std::string& topic) const { return topics_.count(topic) != 0; }
  std::vector<std::string> topics() const;
  std::optional<delivery_mode> mode(const std::string& topic) const;
  std::size_t buffered(const std::string& topic) const;
  std::uint64_t credit(client_id client, const std::string& topic) const;
  std::size_t unacked(client_id client) const;
  std::size_t unacked_total() const { return inflight_.size(); }
  /// Consumers of `topic`: the workers of the hosts that pulled it and neither cancelled nor left.
  std::uint32_t consumers(const std::string& topic) const;

 private:
  struct buffered_delivery {
    broker_ref ref;
    bool redelivered = false;
    std::string body;
    message_props props;
  };
  struct topic_state {
    delivery_mode mode = delivery_mode::at_least_once;
    std::deque<buffered_delivery> buffer;                  ///< waiting for credit
    std::deque<client_id> ready;                           ///< clients with credit, round-robin order
    std::unordered_map<client_id, std::uint64_t> credits;  ///< only entries > 0
    std::unordered_map<client_id, std::uint32_t> pullers;  ///< their consumers; neither cancelled nor left
    std::uint32_t consumers = 0;                           ///< the sum, as last told to the port
    std::size_t in_flight = 0;                             ///< at-least-once delivered, not acked
    clock::time_point last_used;
  };
  using topic_entry = std::map<std::string, topic_state>::value_type;
  struct inflight {
    client_id client = 0;
    topic_entry* topic = nullptr;
    broker_ref ref;
  };

  void hand_over(topic_entry& topic, buffered_delivery&& d);
  void drain(topic_entry& topic);
  void drop_credit(topic_state& topic, client_id client);
  /// Tells the port when the sum of the pullers' consumers changed (never below one).
  void count_consumers(const std::string& topic, topic_state& ts);
  /// Settles an in-flight delivery: ack, or reject (requeue or not). false if `tag` is not `client`'s.
  bool settle(client_id client, std::uint64_t tag, int how);
  void forget_inflight_of(const topic_entry* topic);

  dispatcher_port& port_;
  std::chrono::milliseconds idle_timeout_;
  std::map<std::string, topic_state> topics_;
  std::unordered_map<std::uint64_t, inflight> inflight_;
  std::unordered_map<client_id, std::unordered_set<std::uint64_t>> client_tags_;
  std::uint64_t next_tag_ = 1;
  bool blocked_ = false;
};

}  // namespace dde::mqs
