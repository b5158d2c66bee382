#pragma once
// The enqueuer: one loop (on a thread of its own, or on the MQS's io_context: enqueuer_asio.cpp)
// and one publishing AMQP connection. Channel 1 is in confirm mode for
// at-least-once messages (persistent); channel 2 publishes at-most-once and reply messages
// (transient, no confirms); channel 3 only declares queues, so a refused declare (406) never
// closes a publishing channel; channel 4 publishes pauses. Confirms go back to the hosts as
// `confirm` records.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "amqp_session.hpp"
#include "confirm_tracker.hpp"
#include "confirm_watch.hpp"
#include "dde/core/net/backoff.hpp"
#include "dde/mqs/config.hpp"
#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "deadlines.hpp"
#include "exit_latch.hpp"
#include "flow_control.hpp"
#include "inbox.hpp"
#include "mqs_metrics.hpp"
#include "outgoing_message.hpp"
#include "pause_publisher.hpp"
#include "publish_frames.hpp"
#include "publish_replies.hpp"

namespace boost::asio {
class io_context;
}

namespace dde::mqs {

class strand_loop;

/// A host asked how many messages wait in `topic` (answered with a `depth` record on `conn`).
struct depth_query {
  std::shared_ptr<net::ws_connection> conn;
  std::string topic;
};

class enqueuer {
 public:
  enqueuer(const config& cfg, flow_control& flow, broker_env env = {});
  ~enqueuer();
  /// Runs the loop on a thread of its own, which sleeps in poll() on the broker socket and the inbox.
  void start();
  /// Runs the loop on `io`'s threads instead (a strand; enqueuer_asio.cpp): the broker socket is
  /// watched by io's reactor, a host's messages reach the loop and its confirms reach the host with
  /// no thread woken in between. Plain TCP only (over amqps rabbitmq-c waits while the socket is full).
  void start(boost::asio::io_context& io);
  /// Stops the loop; what is not yet confirmed stays unconfirmed (the hosts resend it). With the loop
  /// on an io_context: call it while io's threads run, or once they have returned.
  void stop();
  /// Thread-safe: queues messages for publishing (the caller counted them in `flow`).
  void submit(std::vector<outgoing_message>&& messages) { inbox_.push(std::move(messages)); }
  bool connected() const { return connected_.load(); }
  /// The place in the broker address list of the node the publishing connection is on; -1: none.
  int node() const { return node_.load(); }
  /// Thread-safe: publishes a pause to the other MQS processes, now or never (see pause_publisher).
  void broadcast(pause_broadcast p) {
    pauses_.submit(std::move(p));
    inbox_.wake();
  }
  /// Thread-safe: queue depths to ask the broker for (a passive declare on the declaring channel).
  void ask_depth(std::vector<depth_query>&& queries) {
    depths_.push(std::move(queries));
    inbox_.wake();
  }

  /// One turn of the thread's loop: connects when due, publishes, reads confirms, answers hosts.
  /// How long the thread may then wait for its inbox or socket (0: go on at once), or nothing once
  /// stopped and drained. Tests call it themselves, without start(), on a fake broker and clock.
  std::optional<std::chrono::milliseconds> turn();
  /// After a turn: frames wait to be written once the socket has room (the next turn writes them
  /// before anything else goes to the broker).
  bool wants_write() const { return !unsent_.empty(); }

 private:
  using clock = std::chrono::steady_clock;
  /// The publishing connection's channels: at-least-once (in confirm mode), the rest, and declares.
  static constexpr std::uint16_t confirm_channel = 1, transient_channel = 2, declare_channel = 3;
  void run();
  /// Turns until the last, sleeping in poll() between them; then closes (the thread's loop, and
  /// stop()'s once io's threads returned).
  void run_turns();
  void finish_loop();
  /// The loop on an io_context (enqueuer_asio.cpp).
  void asio_turn();
  void stop_asio_loop();
  /// Writes what waits in unsent_ without waiting; true once nothing does.
  bool write_unsent();
  clock::time_point now() const { return env_.now(); }
  void connect();
  void lost(const std::string& why);
  void take_inbox();
  void publish_some();
  /// Publishes `msg` (plain TCP: into `batch_`, written by flush_batch).
  bool publish(outgoing_message& msg);
  /// Takes the first message of `mode`'s queue out and refuses it with `error`; false.
  bool refuse_front(delivery_mode mode, const std::string& error);
  void flush_batch();
  bool ensure_declared(const outgoing_message& msg, std::string& error);
  void read_frames();
  /// A method frame the broker sent on `channel`: a confirm, a nack, a close, a block.
  void on_method(std::uint16_t channel, const amqp_method_t& method, std::vector<outgoing_message>& nacked);
  /// Messages the broker nacked go out again after 200 ms, in the order they were first published.
  void retry_nacked(std::vector<outgoing_message> nacked);
  void refuse(outgoing_message&& msg, const std::string& error);
  bool can_publish() const;
  void take_due_retries();
  void publish_pauses();
  void answer_depths();

  config cfg_;
  broker_env env_;
  broker_params params_;
  flow_control& flow_;
  inbox<outgoing_message> inbox_;
  pause_publisher pauses_;
  inbox<depth_query> depths_;
  broker_thread thread_;
  std::shared_ptr<strand_loop> loop_;
  std::atomic<bool> connected_{false};
  std::atomic<int> node_{-1};

  // Owned by the thread.
  std::unique_ptr<amqp_session> session_;
  /// The burst's publish frames on a plain connection (one write per burst, not three per message).
  std::unique_ptr<publish_frames> batch_;
  /// On the io_context a burst's frames that the socket had no room for: written before anything
  /// else (rabbitmq-c's own writes included) once it has, so no write of the loop's thread waits.
  std::string unsent_;
  bool nonblocking_ = false;  ///< writes leave frames in unsent_ rather than wait (the io_context loop)
  /// unsent_'s size, as dde_mqs_publish_unwritten_bytes.
  metric_cell& unsent_gauge_;
  void count_unsent() { unsent_gauge_.set(double(unsent_.size())); }
  bool ever_connected_ = false;
  std::uint64_t burst_wall_us_ =
      0;  ///< the wall clock (µs since the epoch) as this burst began: the publish stamp
  /// The loop's timed work: (re)connecting, and reading the socket whatever its watch says (sweep).
  enum class timer { connect, sweep, count };
  deadlines<timer> timers_;
  confirm_watch confirms_{cfg_.confirm_timeout};
  /// Replaces the connection when confirms are overdue (config::confirm_timeout).
  void confirms_overdue();
  /// The socket may hold frames (confirms, heartbeats, a close): its watch said so, a new
  /// connection, the once-a-second sweep, or the thread's loop (which reads every turn). Reading
  /// it only then spares each publishing turn a read that finds nothing.
  bool readable_ = true;
  std::optional<clock::time_point> drain_until_;  ///< stopping: how long confirms are waited for
  net::backoff backoff_{net::data_path_retry_initial, net::data_path_retry_max};
  std::deque<outgoing_message> pending_confirmed_;  ///< at-least-once, waiting to be published
  std::deque<outgoing_message> pending_transient_;  ///< at-most-once and reply
  /// At-least-once messages the broker nacked (e.g. a quorum queue still electing its leader): published
  /// again after a pause, never refused to the host: at-least-once does not drop.
  std::deque<std::pair<clock::time_point, outgoing_message>> retry_;
  confirm_tracker<outgoing_message> unconfirmed_;
  /// Topics whose queues were declared, until when that holds; queues found with other arguments.
  struct declared_queues {
    std::unordered_map<std::string, clock::time_point> until;
    std::unordered_set<std::string> warned;
  } declared_;
  publish_replies replies_;
  topic_counter_cache counted_;  ///< this thread's topic counters (every publish counts)
};

}  // namespace dde::mqs
