#pragma once
// The top level of an isolate system: its one WebSocket to the MQS. Keeps retrying with backoff,
// batches records, resends unconfirmed at-least-once messages after a reconnect, hands
// deliveries to the router of their topic, and carries pool-wide pauses both ways.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "credit_watch.hpp"
#include "dde/core/net/retry_timer.hpp"
#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/wire/record.hpp"
#include "link_waiters.hpp"
#include "mqs_link.hpp"
#include "outbound.hpp"
#include "pool_sinks.hpp"

namespace dde::host {

struct top_level_options {
  /// One `ws://` URL, or several comma-separated: after a failed connect or a lost link the top
  /// level tries the next one (another MQS on the same broker takes over while one is down).
  std::string mqs_url = "ws://127.0.0.1:42043/mqs";
  std::string system;
  std::string instance;       ///< this isolate-system instance's UUID
  std::size_t window = 4096;  ///< unconfirmed at-least-once messages before senders wait
  std::size_t reply_credit = 256;
  /// A pool with credit out at the MQS that got no delivery for this long while its queue holds
  /// ready messages is stalled (credit_watch.hpp): logged, counted, /health degraded, and the
  /// link moves to a fresh connection. 0: never.
  std::chrono::milliseconds stall_timeout{30000};
  /// Opens the WebSocket to an MQS (on success the handler's on_open runs, on failure only
  /// `on_fail`): net::ws_connect with the cluster's options when empty; tests record the attempts
  /// and open fake connections themselves.
  std::function<void(const net::ws_url& url, std::shared_ptr<net::ws_handler> handler,
                     std::function<void(const std::string&)> on_fail)>
      connect;
};

/// Counters and the state of the MQS link, read for logs, tests, `/metrics` and `/health`.
struct top_level_stats {
  std::uint64_t enqueued = 0, confirmed = 0, rejected = 0, delivered = 0, resent = 0, reconnects = 0,
                replies_dropped = 0, dropped_at_most_once = 0;
  bool linked = false;     ///< connected to an MQS that welcomed this host
  std::string link_error;  ///< why it is not (empty while linked)
  std::string stalled;     ///< pools found stalled lately ("a.b for 12000 ms"); empty when none
  std::map<std::string, std::uint64_t> stalls;  ///< stalls found so far, by pool topic
};

class top_level : public std::enable_shared_from_this<top_level>, public net::ws_handler, public mqs_link {
 public:
  top_level(boost::asio::io_context& io, top_level_options options);

  void start();
  /// Waits (up to `timeout`) until every at-least-once message is confirmed, then closes.
  void stop(std::chrono::milliseconds timeout, std::function<void()> done);

  // mqs_link (thread-safe: each posts to the top level's strand).
  void enqueue(std::string topic, delivery_mode mode, std::string props, std::string body) override;
  void enqueue_then(std::string topic, std::string props, std::string body,
                    std::function<void(bool)> settled) override;
  /// `consumers` is told to the MQS (a broker consumer each, so its prefetch is per worker).
  void pull(const std::string& topic, delivery_mode mode, std::size_t credit,
            std::uint32_t consumers = 0) override;
  void ack(std::uint64_t generation, std::uint64_t tag) override;
  void nack(std::uint64_t generation, std::uint64_t tag, bool requeue) override;
  void cancel(const std::string& topic) override;
  /// To every host consuming `topic` through any MQS on the broker, this one included (1 ms to 1 h;
  /// `reason` is cut to 1000 characters); dropped while the MQS link is down.
  void pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason) override;
  void partition(const std::string& topic, std::uint32_t count, const std::string& key) override;
  void attach(const std::string& topic, std::weak_ptr<topic_sink> sink) override;
  void detach(const std::string& topic) override;
  void set_pause_handler(const std::string& topic, pause_handler fn) override;
  /// A passive declare at the broker, for autoscaling; with an error at once when the MQS link is
  /// down, or when it drops before the answer.
  void queue_depth(const std::string& topic, depth_handler fn) override;
  void when_writable(std::function<void()> fn) override;
  const std::string& instance() const override { return options_.instance; }

  /// Runs `fn("")` once the link to an MQS is up (at once if it is), or `fn(why not)` after `timeout`.
  void when_linked(std::chrono::milliseconds timeout, std::function<void(std::string error)> fn);
  /// Runs `fn` with the counters and the link's state, on the strand.
  void read_stats(std::function<void(const top_level_stats&)> fn);

  const std::string& system() const { return options_.system; }

  // net::ws_handler
  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

 private:
  /// An at-least-once enqueue: numbered, sent if connected, kept until the MQS settles it (on the strand).
  void hold_until_confirmed(pending_enqueue m);
  void do_connect();
  /// "ws://host:port/path" of the current URL, for logs.
  std::string current_url() const;
  void schedule_reconnect(const std::string& why);
  /// A record of the MQS, read on the connection's thread; handled on the strand.
  struct incoming {
    mqs::mqs_record record;
    std::string body;
  };
  void handle(incoming& in);
  /// A delivery: a reply goes to its pool at once, a pool's delivery into `inbound_.handing` (or back to
  /// the MQS when its pool is gone).
  void handle_deliver(mqs::deliver_record& r, std::string body);
  /// Hands each pool the deliveries `inbound_.handing` gathered for it from one WebSocket message.
  void hand_deliveries();
  void handle_record(const mqs::welcome_record& r);
  void handle_record(const mqs::confirm_record& r);
  void handle_record(const mqs::reject_record& r);
  void handle_record(const mqs::depth_record& r);
  void handle_record(const mqs::pause_record& r);
  void handle_record(const mqs::error_record& r);
  /// Asks the MQS how many messages wait in `topic`'s queue (on the strand); `fn` hears the answer,
  /// or an error at once when the link is down, or when it drops before the answer.
  void ask_depth(const std::string& topic, depth_handler fn);
  void schedule_flush();
  void flush();
  /// Sends the records batched so far (not the acks and pulls) to the MQS as one WebSocket message
  /// (link_.conn must be set).
  void send_out();
  /// Appends an enqueue to the batch, and sends it at once when it holds flush_at_bytes (see there).
  void append_enqueue(std::uint64_t seq, const pending_enqueue& m, delivery_mode mode);
  bool writable() const;
  void check_writable();
  /// Once a second while the link is up: asks the MQS about pools that get nothing (credit_watch).
  void schedule_watch();
  void watch();
  /// `topic` is stalled: logged, and the link moves to a fresh connection.
  void stalled(const std::string& topic, const std::string& evidence);
  /// Drops the link at once (its close handshake may never end: the peer may not be reading) and
  /// connects again, to the next MQS URL if there are several.
  void abandon_link(const std::string& why);
  /// The link is gone (closed, or abandoned): its depth questions fail, and unless the top level
  /// stops, it connects again.
  void link_lost(const std::string& why);
  void check_stopping();

  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
  boost::asio::io_context& io_;
  strand_type strand_;
  top_level_options options_;
  const std::string reply_topic_;  ///< this instance's reply queue (compared with every delivery's topic)
  /// The WebSocket to an MQS, and how it is found again.
  struct mqs_connection {
    explicit mqs_connection(strand_type& strand)
        : retry(strand, net::data_path_retry_initial, net::data_path_retry_max) {}
    std::vector<net::ws_url> urls;
    std::size_t current = 0;  ///< the URL connected to, or tried next
    std::shared_ptr<net::ws_connection> conn;
    bool welcomed = false;
    std::uint64_t generation = 0;  ///< of the connection: what an older one's handlers find is stale
    net::retry_timer retry;
  } link_{strand_};
  /// Senders held back while the window is full or the socket's send queue is long (when_writable).
  struct held_writers {
    explicit held_writers(strand_type& strand) : timer(strand) {}
    std::vector<std::function<void()>> waiting;
    boost::asio::steady_timer timer;  ///< polls the send queue, which has no event when it drains
    bool armed = false;
  } writers_{strand_};
  outgoing_batch batch_;  ///< what the next flush sends
  bool flush_scheduled_ = false;
  unconfirmed_window window_;
  pool_sinks pools_;
  top_level_stats stats_;
  /// Pools that get nothing while their queues hold messages, looked for once a second.
  struct pool_watch {
    pool_watch(strand_type& strand, std::chrono::milliseconds stall_timeout)
        : pools(stall_timeout), timer(strand) {}
    credit_watch pools;
    boost::asio::steady_timer timer;
  } watching_{strand_, options_.stall_timeout};
  /// The WebSocket message being handled.
  struct inbound_message {
    std::chrono::steady_clock::time_point now{};  ///< when it came
    /// Its deliveries, by pool, in their order (few pools: a vector).
    std::vector<std::pair<std::shared_ptr<topic_sink>, std::vector<topic_sink::delivery>>> handing;
  } inbound_;
  /// Stopping: asked, the link's close on its way, who hears it is done, and how long that may take.
  struct stop_state {
    explicit stop_state(strand_type& strand) : timer(strand) {}
    bool requested = false;
    bool close_sent = false;
    std::function<void()> done;
    boost::asio::steady_timer timer;
  } stop_{strand_};
  link_waiters link_waiters_;  ///< when_linked's
  /// Why there is no link now, for messages.
  std::string link_error() const;
};

}  // namespace dde::host
