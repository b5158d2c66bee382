#pragma once
// The dequeuers: one thread; one consuming AMQP connection per topic that hosts pull (a
// `broker_link`: basic.qos prefetch, manual acks), so that a connection-level error on one topic
// never voids the deliveries of another; and a main connection that consumes the pauses. The
// bookkeeping of credits and tags is the `dispatcher`; this class is its broker side and its mailbox.
// It also tells hosts of pauses (the `pause_board`): those their own MQS received, and those of
// other MQS processes, read from a private queue bound to the governance exchange.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "broker_link.hpp"
#include "channel_table.hpp"
#include "dde/core/net/backoff.hpp"
#include "dde/core/stall_watch.hpp"
#include "dde/mqs/config.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "deadlines.hpp"
#include "dequeue_commands.hpp"
#include "dispatcher.hpp"
#include "enqueuer.hpp"
#include "exit_latch.hpp"
#include "host_outboxes.hpp"
#include "inbox.hpp"
#include "link_opener.hpp"
#include "link_walk.hpp"
#include "mqs_metrics.hpp"
#include "own_messages.hpp"
#include "pause_feed.hpp"
#include "resent_ids.hpp"

namespace boost::asio {
class io_context;
}

namespace dde::mqs {

/// The number of a consumer on a topic's channel, given the first one's tag: 0 for `first`, n for
/// "<first>+<n>", `lease_consumer` for any other ("<first>+<lease_suffix>", the lease queue's).
constexpr std::uint32_t lease_consumer = 0xffffffff;
std::uint32_t consumer_number(std::string_view tag, std::string_view first);

class dequeuer : private dispatcher_port {
 public:
  /// `mqs_id` names this MQS process: its own pauses coming back from the broker are skipped.
  dequeuer(const config& cfg, std::string mqs_id, broker_env env = {});
  ~dequeuer() override;
  /// Runs the loop on a thread of its own, which sleeps in poll() on the broker sockets and the inbox.
  void start();
  /// Runs the loop on `io`'s threads instead (a strand; dequeuer_loop.cpp): the broker sockets are
  /// watched by io's reactor, a host's records reach the loop and its deliveries reach the host with
  /// no thread woken in between. Links are still opened on the opener thread.
  void start(boost::asio::io_context& io);
  /// The last turn (what hosts sent reaches the broker), then the connections close. With the loop
  /// on an io_context: call it while io's threads run, or once they have returned.
  void stop();
  /// Thread-safe.
  void submit(std::vector<dequeue_command>&& commands) { loop_.commands.push(std::move(commands)); }
  /// Before start(): how the MQS's own messages (lease copies, dead-lettered copies) are published
  /// (the enqueuer's submit, counted in its flow). Without it they are refused.
  void set_publisher(std::function<void(std::vector<outgoing_message>&&)> publish) {
    own_messages_.set_publisher(std::move(publish));
  }

  using clock = std::chrono::steady_clock;
  /// One turn of the thread's loop: connects and consumes when due, handles the hosts' commands,
  /// reads every connection that may have frames, sends acks and deliveries. When to come back at
  /// the latest (sooner if the inbox or a socket has something), or nothing after the last turn.
  /// Tests call it themselves, without start(), on a fake broker and clock.
  std::optional<clock::time_point> turn();
  /// Tests without start(): where links are opened (`run` gets the opening to do, on any thread, at
  /// any time); by default in the turn that plans them.
  void set_opener(link_opener::runner run) { loop_.opener.set_runner(std::move(run)); }
  /// The stalled topics, for /health ("a.b for 12000 ms, ..."; empty: none). Any thread.
  std::string stall_report() const { return stalls_.report(now()); }

 private:
  clock::time_point now() const { return env_.now(); }
  /// The loop's turn.
  struct turn_state {
    /// When this turn started: the time stamped on what the turn reads and settles (one clock read
    /// a turn rather than two a message).
    clock::time_point now{};
    std::uint64_t sweeps = 0;  ///< sweeps so far: each reads its slice of the links (see sweep)
    link_walk walk;            ///< which links it visits: every one, or those with something to read
  } turn_;
  struct consumer {
    delivery_mode mode = delivery_mode::at_least_once;
    std::uint32_t wanted = 1;  ///< broker consumers on its channel: one per worker of the hosts pulling it
    std::uint32_t partitions = 0;  ///< a partitioned topic's: one queue and one consumer each
    std::string key;               ///< and the body field that picks a message's partition
    broker_link link;              ///< its own connection; link.channel is 0 while not consuming
    clock::time_point retry_at{};
    /// After the broker cancelled or closed the consumer (1 s, doubling to 30 s).
    net::backoff retry{std::chrono::milliseconds(1000), std::chrono::milliseconds(30000)};
    /// After its connection failed (a 541 on basic.consume, say): 100 ms, doubling to 500 ms.
    net::backoff reconnect{net::data_path_retry_initial, net::data_path_retry_max};
    std::uint64_t opening = 0;  ///< the epoch of its link being opened off the thread, 0 when none is
    /// The broker node its link tries first: on a cluster, one its topic's name picks, then the one
    /// after the node its last link was on.
    std::optional<std::size_t> first_node;
  };
  void run();
  /// The next turn takes from the inbox and the opener whether or not a poll saw their eventfds
  /// (no poll ran, or it was interrupted).
  void take_inboxes_next_turn() {
    loop_.commands.saw(true);
    loop_.opener.saw(true);
  }
  /// Turns the loop, sleeping in wait() between turns, until a turn says it was the last: the
  /// thread's loop, and the last turns of an asio loop whose io_context has stopped.
  void run_turns();
  /// The loop on an io_context (dequeuer_loop.cpp).
  struct asio_loop;
  /// After the last turn: the connections close (what they had buffered goes back to its queue).
  void finish_loop();
  void stop_asio_loop();
  void connect();
  void connection_lost();
  // One handler per command (dequeue_commands.hpp).
  void handle(dequeue::pull& c, clock::time_point now);
  void handle(dequeue::ack& c, clock::time_point now);
  void handle(dequeue::nack& c, clock::time_point now);
  void handle(dequeue::cancel& c, clock::time_point now);
  void handle(dequeue::disconnect& c, clock::time_point now);
  void handle(dequeue::pause& c, clock::time_point now);
  void handle(dequeue::leased& c, clock::time_point now);
  void handle(dequeue::dead_lettered& c, clock::time_point now);
  void handle(dequeue::depth& c, clock::time_point now);
  void read_frames(broker_link& link);
  void on_method(broker_link& link, amqp_frame_t& frame);
  void complete(channel_state& ch);
  /// The channel of `link`'s current consumer, or nullptr.
  channel_state* channel_of(broker_link& link) { return channels_.find(link.epoch); }
  void drop_channel(std::uint64_t epoch, const std::string& why, bool close);
  /// Until unwatch_rpcs, stop() frees an RPC hung on `link` by shutting its socket down (then the
  /// main connection's again).
  void watch_rpcs(broker_link& link) { loop_.thread.socket_fd = link.session->fd(); }
  void unwatch_rpcs() { loop_.thread.socket_fd = main_.session ? main_.session->fd() : -1; }
  /// Adds broker consumers on `c`'s channel until there are `c.wanted`; cancels the extra ones only
  /// once no delivery came for `shrink_quiet` (see dequeuer_consumers.cpp). Returns when that is.
  clock::time_point match_consumers(const std::string& topic, consumer& c, clock::time_point now);
  /// Cancels the extra consumers of channels that became quiet; returns when to look again.
  clock::time_point shrink_quiet_consumers(clock::time_point now);
  /// Plans `topic`'s link and has the opener open it.
  void plan_link(const std::string& topic, consumer& c, bool first);
  /// Takes on a link the opener opened.
  void adopt(link_plan& plan);
  /// A topic's connection failed: its deliveries are void; it consumes again after a backoff.
  void link_lost(const std::string& topic, consumer& c);
  void retry_consumers(clock::time_point now);
  /// The next channel number on the main connection.
  std::uint16_t allocate_channel() { return channels_.next_channel(main_.session->channel_max()); }
  /// Sends the acks due and what hosts are owed; `all`: every held ack too (the last turn).
  /// Returns when the first ack still held must go (max(): none is).
  clock::time_point flush(bool all);
  /// Waits until the inbox or a connection has something, or `wake_at`.
  void wait(clock::time_point wake_at);

  // dispatcher_port
  std::string start_consumer(const std::string& topic, delivery_mode mode, std::uint32_t partitions) override;
  void stop_consumer(const std::string& topic) override;
  void set_consumers(const std::string& topic, std::uint32_t consumers) override;
  void ack(const broker_ref& ref) override;
  void release(const broker_ref& ref) override;
  void publish_lease(const std::string& topic, std::uint64_t id, const std::string& body,
                     const message_props& props) override;
  void dead_letter_copy(const std::string& topic, const std::string& body, const message_props& props,
                        const broker_ref& ref) override;
  void reject(const broker_ref& ref, bool requeue) override;
  void returned(const std::string& topic) override { books_.counted(topic).returned.add(); }
  void deliver(client_id client, const std::string& topic, std::uint64_t tag, bool redelivered,
               const std::string& body, const message_props& props) override;
  bool can_deliver(client_id client) override;

  channel_state* channel_for(const broker_ref& ref) { return channels_.find(ref.epoch); }  // null: gone
  /// Queues an ack of `ref` on `ch` (sent at the end of the turn): ack() counts it, release() not.
  void queue_ack(channel_state& ch, const broker_ref& ref);

  // Leases (dequeuer.cpp).
  void on_lease_copy(channel_state& ch);
  /// Reads the main link and the consuming links with something to read (link_walk.hpp).
  void read_links();
  /// When the loop must turn again at the latest: its timers, a topic's retry, an ack held.
  clock::time_point wake_time(clock::time_point acks_due);
  /// Once a second: every link is read, and the stalls checked (not in the last turns).
  void sweep(clock::time_point now, bool last);
  /// Once a second: topics whose consumer got nothing while hosts wait have their queue's depth asked,
  /// off the loop (stall_watch.hpp); a stalled one is consumed afresh when the answer comes (on_depth).
  void check_stalls(clock::time_point now);

  /// Consumes other MQS processes' pauses on the main connection when due (pause_feed).
  void retry_governance(clock::time_point now);
  std::string setup_governance();

  config cfg_;
  stall_watch stalls_{cfg_.stall_timeout};
  std::string mqs_id_;
  broker_env env_;
  /// How the loop is fed and run: the hosts' commands, its own thread or a strand of the MQS's
  /// io_context, and the thread that opens links off it.
  struct loop_parts {
    inbox<dequeue_command> commands;
    broker_thread thread;
    link_opener opener;
    std::shared_ptr<asio_loop> asio;
  } loop_;

  // Owned by the thread.
  dispatcher dispatcher_;
  /// The main connection: it consumes the pauses, and topics connect while it is up (the broker is).
  struct main_link : broker_link {
    /// The broker's parameters: this connection's, and those every topic's link starts from.
    broker_params params;
    net::backoff reconnect{net::data_path_retry_initial, net::data_path_retry_max};
    bool ever_connected = false;
  } main_;
  std::map<std::string, consumer> consumers_;
  channel_table channels_;
  host_outboxes hosts_;
  /// What each delivery and ack is checked against and counted in.
  struct delivery_books {
    resent_ids resent;            ///< ids of resent copies delivered lately
    topic_counter_cache counted;  ///< this thread's topic counters (every delivery and ack counts)
  } books_;
  /// The loop's timed work: (re)connecting, reading every link (sweep), expiring idle hosts,
  /// cancelling a quiet channel's extra consumers (shrink), renewing leases, consuming pauses again,
  /// and, set by the first turn after stop(), how long the last turns wait for lease copies on their way.
  enum class timer { connect, sweep, idle_check, shrink, lease_check, governance_retry, stop_grace, count };
  deadlines<timer> timers_;
  /// Whether `t` can do anything now, so that its deadline wakes the loop.
  bool counts(timer t) const;
  /// The pauses hosts are told of, theirs and other MQS processes'.
  pause_feed pauses_{mqs_id_, hosts_};
  own_messages own_messages_;  ///< lease and dead-lettered copies
};

}  // namespace dde::mqs
