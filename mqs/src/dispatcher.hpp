#pragma once
/// \file
/// The dequeuing bookkeeping of the MQS, without any AMQP: which host has credit on which topic,
/// round-robin among them, the MQS delivery tags and the broker deliveries they stand for,
/// requeueing on disconnect or cancel, idle topics. One thread owns it (the dequeuer thread).

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dde/names.hpp"
#include "dde/protocol/mqs_props.hpp"
#include "partition_board.hpp"

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
  /// Starts consuming `topic` (first pull): its queue, or with `partitions` its partitions' queues,
  /// one consumer each (see on_delivery); an error text when that is refused at once.
  virtual std::string start_consumer(const std::string& topic, delivery_mode mode,
                                     std::uint32_t partitions) = 0;
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
  /// Acks `ref` for a lease (renewed, or acked early): not a host's ack.
  virtual void release(const broker_ref& ref) { ack(ref); }
  virtual void reject(const broker_ref& ref, bool requeue) = 0;
  /// Hands a message to a host.
  virtual void deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
                       const std::string& body, const message_props& props) = 0;
  /// Leases (mqs/PROTOCOL.md): publishes a copy of held delivery `id` of at-least-once `topic` to
  /// the topic's lease queue, `id` in its header; the answer comes as dispatcher::lease_published.
  virtual void publish_lease(const std::string& topic, std::uint64_t id, const std::string& body,
                             const message_props& props) {
    (void)topic, (void)id, (void)body, (void)props;
  }
  /// A host dropped a delivery that is a lease copy (whose queue dead-letters to `topic`, not to
  /// dde.dead.<topic>): publishes it to dde.dead.<topic>, then acks `ref`.
  virtual void dead_letter_copy(const std::string& topic, const std::string& body, const message_props& props,
                                const broker_ref& ref) {
    (void)topic, (void)body, (void)props, (void)ref;
  }
  /// False while a host's send queue is full (it does not read its socket): deliveries wait in
  /// the MQS, bounded by the prefetch, and the rest in the broker, until `retry_blocked`.
  virtual bool can_deliver(client_id) { return true; }
  /// A delivery of `topic` goes back to its queue: a host nacked it with requeue, or held it when it
  /// cancelled or went away (counted, not acted on: the settling goes through reject).
  virtual void returned(const std::string& topic) { (void)topic; }
};

class dispatcher {
 public:
  using clock = std::chrono::steady_clock;

  /// `lease`: how long a delivery is held before it is renewed (0: never; see renew_leases).
  dispatcher(dispatcher_port& port, std::chrono::milliseconds idle_timeout,
             std::chrono::milliseconds lease = std::chrono::milliseconds(0))
      : port_(port), idle_timeout_(idle_timeout), lease_(lease) {}

  /// `client` can take `credit` more messages of `topic`, and consumes it with `consumers` workers
  /// (0: as it last said, or 1). A topic pulled with `partitions` is partitioned: each partition
  /// goes to one of the hosts pulling it at a time, its deliveries in order (partition_board.hpp).
  /// An error text when refused.
  std::string pull(client_id client, const std::string& topic, delivery_mode mode, std::uint32_t credit,
                   clock::time_point now, std::uint32_t consumers = 0, std::uint32_t partitions = 0);
  /// The host is done with these deliveries (at-least-once: now acked to the broker).
  /// Unknown tags, tags of another host and tags made void by a reconnect are ignored.
  void ack(client_id client, const std::vector<std::uint64_t>& tags, clock::time_point now);
  /// Gives deliveries back (requeue) or drops/dead-letters them.
  void nack(client_id client, const std::vector<std::uint64_t>& tags, bool requeue, clock::time_point now);
  /// `client` stops pulling `topic`: its credit goes and its unacked deliveries are requeued; of a
  /// partitioned topic they stay its own to settle, and its partitions move once it has.
  void cancel(client_id client, const std::string& topic, clock::time_point now);
  /// `client` is gone: the same for every topic; what it had of a partitioned topic goes, flagged
  /// redelivered, first to its partitions' next owners (the MQS still holds it at the broker).
  void disconnect(client_id client, clock::time_point now);

  /// A message arrived from the broker for `topic` (at `now`, from which its lease counts), from the
  /// queue of its partition `partition` when the topic is partitioned.
  void on_delivery(const std::string& topic, const broker_ref& ref, bool redelivered, std::string body,
                   message_props props = {}, clock::time_point now = {}, std::uint32_t partition = 0);

  // Leases: RabbitMQ takes back a delivery unacknowledged for its consumer_timeout (closing the
  // channel, so every delivery of it). A delivery held for the lease (waiting for credit, or with
  // a host) is renewed before: an at-least-once one is copied to the topic's lease queue
  // (publish_lease); once the broker confirmed the copy the old delivery is acked, and the copy,
  // delivered to this MQS in turn, stands for it. The host sees nothing of it. An at-most-once one
  // is acked at once (from then on the MQS's alone, as once handed over).
  /// Renews what is due; when the next lease falls due (the latest to call again).
  clock::time_point renew_leases(clock::time_point now);
  /// The broker confirmed (`ok`) or refused the copy of delivery `id`.
  void lease_published(std::uint64_t id, bool ok, clock::time_point now);
  /// A copy arrived from `topic`'s lease queue with delivery `id` in its header.
  void on_lease_copy(const std::string& topic, const broker_ref& ref, std::uint64_t id,
                     clock::time_point now);
  /// Deliveries whose copy is under way or awaited: at least one lease was taken.
  std::size_t renewing() const;
  /// Before its consumers close (a clean stop): each held lease copy is rejected without requeue,
  /// so the lease queue dead-letters it to its topic now rather than when its TTL runs out.
  void hand_back_copies();
  /// The consumer of `topic` died (channel closed): its deliveries are void (the broker requeues them).
  void on_consumer_lost(const std::string& topic);
  /// The broker refused to consume `topic` (start_consumer's refusal, told later): the topic is
  /// forgotten (a later pull tries again); the clients that pulled it, to be told why.
  std::vector<client_id> refuse(const std::string& topic);
  /// The broker connection dropped: every delivery is void.
  void on_broker_lost();

  /// Hands over what waited for hosts whose send queues were full; false when some still wait.
  bool retry_blocked();
  /// True when a delivery waits for a host whose send queue is full.
  bool blocked() const { return blocked_; }

  /// True when hosts hold credit on `topic` and no delivery of it waits for credit: a delivery from
  /// the broker would go out at once.
  bool starved(const std::string& topic) const;

  /// Closes topics idle for the idle timeout: no credit, nothing unacked, no pull meanwhile. It
  /// looks only at the topics whose credit ran out since (an MQS may serve thousands of topics whose
  /// hosts hold credit and wait: none of those can be idle).
  void expire_idle(clock::time_point now);
  /// Whether a topic may go idle: expire_idle has something to look at.
  bool watching_idle() const { return !idle_watch_.empty(); }

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
  /// The partitions of `topic` `client` owns or is to own once drained (0: none, or not partitioned).
  std::size_t partitions_of(client_id client, const std::string& topic) const;

 private:
  // How a host settled a delivery.
  static constexpr int settle_ack = 0;
  static constexpr int settle_requeue = 1;
  static constexpr int settle_drop = 2;
  static constexpr int settle_release = 3;  ///< a lease copy left over: acked, not counted as the host's

  enum class lease_phase : std::uint8_t {
    held,        ///< `ref` holds it
    publishing,  ///< `ref` holds it; its copy is being published
    moved,       ///< `ref` was acked (it is void); the copy is on its way from the lease queue
  };
  /// A delivery the MQS holds and what stands for it at the broker.
  struct holding {
    broker_ref ref;  ///< void (epoch 0) while moved, or once an at-most-once one was acked early
    std::uint64_t id = 0;
    clock::time_point since{};  ///< when `ref` was taken
    lease_phase phase = lease_phase::held;
    bool copy = false;  ///< `ref` is a delivery of the topic's lease queue
  };
  struct buffered_delivery {
    holding hold;
    bool redelivered = false;
    std::string body;
    message_props props;
  };
  using credit_map = std::unordered_map<client_id, std::uint64_t>;
  struct topic_state {
    delivery_mode mode = delivery_mode::at_least_once;
    std::deque<buffered_delivery> buffer;  ///< waiting for credit
    /// A partitioned topic's owners and what waits for each (its deliveries are not in `buffer`).
    std::unique_ptr<partition_board<buffered_delivery>> parts;
    std::deque<client_id> ready;                           ///< clients with credit, round-robin order
    credit_map credits;                                    ///< only entries > 0
    std::unordered_map<client_id, std::uint32_t> pullers;  ///< their consumers; neither cancelled nor left
    std::uint32_t consumers = 0;                           ///< the sum, as last told to the port
    std::size_t in_flight = 0;                             ///< at-least-once delivered, not acked
    clock::time_point last_used;
    bool idle_watched = false;  ///< listed in idle_watch_
  };
  using topic_entry = std::map<std::string, topic_state>::value_type;
  struct inflight {
    client_id client = 0;
    topic_entry* topic = nullptr;
    holding hold;
    std::string body;  ///< kept for a lease copy (when leases are on) or a partition's next owner
    message_props props;
    std::uint32_t partition = 0;
  };
  /// A delivery the host settled while its copy was under way: the copy is settled as it comes.
  struct orphan {
    topic_entry* topic = nullptr;
    int how = 0;  ///< settle_*: what to do with the copy
    std::string body;
    message_props props;
  };

  void hand_over(topic_entry& topic, buffered_delivery&& d);
  /// Sends `d` to `client`, taking one of its credits.
  void send(topic_entry& topic, client_id client, buffered_delivery&& d, std::uint32_t partition);
  void drain(topic_entry& topic);
  /// drain() of a partitioned topic: each host with credit gets what waits of its partitions.
  void drain_partitions(topic_entry& topic);
  /// disconnect() of a partitioned topic: what `client` had in hand goes to the next owners.
  void lose_partitions(topic_entry& topic, client_id client);
  void drop_credit(topic_entry& topic, client_id client);
  /// A client's credit on `topic` is spent or withdrawn; the topic's last one: watched for idleness.
  void erase_credit(topic_entry& topic, credit_map::iterator credit);
  /// `topic` has no credit left (or never had): expire_idle looks at it from now on.
  void watch_idle(topic_entry& topic);
  /// Tells the port when the sum of the pullers' consumers changed (never below one).
  void count_consumers(const std::string& topic, topic_state& ts);
  /// Settles an in-flight delivery: ack, or reject (requeue or not). false if `tag` is not `client`'s.
  bool settle(client_id client, std::uint64_t tag, int how);
  void forget_inflight_of(const topic_entry* topic);
  /// Settles `h` at the broker as the host asked (`how`, settle_*); see dispatcher_leases.cpp.
  void settle_hold(topic_entry& topic, holding& h, int how, std::string& body, message_props& props);
  /// Settles a lease copy at the broker: acked, back to its topic, or dead-lettered.
  void settle_copy(const std::string& topic, const broker_ref& ref, int how, const std::string& body,
                   const message_props& props);
  /// The held delivery `id` and its topic, or nullptr.
  holding* find_hold(std::uint64_t id, topic_entry** topic = nullptr);
  void forget_orphans_of(const topic_entry* topic);

  dispatcher_port& port_;
  std::chrono::milliseconds idle_timeout_;
  std::map<std::string, topic_state> topics_;
  /// The topics without credit, that expire_idle looks at (each until it has credit again).
  std::vector<topic_entry*> idle_watch_;
  std::unordered_map<std::uint64_t, inflight> inflight_;
  std::unordered_map<client_id, std::unordered_set<std::uint64_t>> client_tags_;
  std::chrono::milliseconds lease_;
  std::unordered_map<std::uint64_t, orphan> orphans_;
  std::uint64_t next_tag_ = 1;
  std::uint64_t next_hold_ = 1;
  bool blocked_ = false;
};

}  // namespace dde::mqs
