#pragma once
// The enqueuer: one loop (on a thread of its own, or on the MQS's io_context: enqueuer_loop.cpp)
// and one publishing AMQP connection. Channel 1 is in confirm mode for
// at-least-once messages (persistent); channel 2 publishes at-most-once and reply messages
// (transient, no confirms); channel 3 only declares queues, so a refused declare (406) never
// closes a publishing channel; channel 4 publishes pauses. Confirms go back to the hosts as
// `confirm` records.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "amqp_session.hpp"
#include "dde/core/net/backoff.hpp"
#include "dde/mqs/config.hpp"
#include "dde/names.hpp"
#include "dde/net/ws.hpp"
#include "deadlines.hpp"
#include "exit_latch.hpp"
#include "flow_control.hpp"
#include "frame_writer.hpp"
#include "inbox.hpp"
#include "mqs_metrics.hpp"
#include "outgoing_message.hpp"
#include "pause_publisher.hpp"
#include "publish_confirms.hpp"
#include "publish_queues.hpp"
#include "publish_replies.hpp"
#include "queue_admin.hpp"

namespace boost::asio {
class io_context;
}

namespace dde::mqs {

class strand_loop;

class enqueuer {
 public:
  enqueuer(const config& cfg, flow_control& flow, broker_env env = {});
  ~enqueuer();
  /// Runs the loop on a thread of its own, which sleeps in poll() on the broker socket and the inbox.
  void start();
  /// Runs the loop on `io`'s threads instead (a strand; enqueuer_loop.cpp): the broker socket is
  /// watched by io's reactor, a host's messages reach the loop and its confirms reach the host with
  /// no thread woken in between. Plain TCP only (over amqps rabbitmq-c waits while the socket is full).
  void start(boost::asio::io_context& io);
  /// Stops the loop; what is not yet confirmed stays unconfirmed (the hosts resend it). With the loop
  /// on an io_context: call it while io's threads run, or once they have returned.
  void stop();
  /// Thread-safe: queues messages for publishing (the caller counted them in `flow`).
  void submit(std::vector<outgoing_message>&& messages) { inbox_.push(std::move(messages)); }
  bool connected() const { return link_.up.load(); }
  /// The place in the broker address list of the node the publishing connection is on; -1: none.
  int node() const { return link_.node.load(); }
  /// Thread-safe: publishes a pause to the other MQS processes, now or never (see pause_publisher).
  void broadcast(pause_broadcast p) {
    pauses_.submit(std::move(p));
    inbox_.wake();
  }
  /// Thread-safe: queue depths to ask the broker for (a passive declare on the declaring channel).
  void ask_depth(std::vector<depth_query>&& queries) {
    admin_.ask(std::move(queries));
    inbox_.wake();
  }

  /// One turn of the thread's loop: connects when due, publishes, reads confirms, answers hosts.
  /// How long the thread may then wait for its inbox or socket (0: go on at once), or nothing once
  /// stopped and drained. Tests call it themselves, without start(), on a fake broker and clock.
  std::optional<std::chrono::milliseconds> turn();
  /// After a turn: frames wait to be written once the socket has room (the next turn writes them
  /// before anything else goes to the broker).
  bool wants_write() const { return writer_.pending(); }

 private:
  using clock = std::chrono::steady_clock;
  /// The publishing connection's channels: at-least-once (in confirm mode), the rest, and declares.
  enum channel_number : std::uint16_t { confirm_channel = 1, transient_channel = 2, declare_channel = 3 };
  void run();
  /// Turns until the last, sleeping in poll() between them; then closes (the thread's loop, and
  /// stop()'s once io's threads returned).
  void run_turns();
  void finish_loop();
  /// The loop on an io_context (enqueuer_loop.cpp).
  void asio_turn();
  void stop_asio_loop();
  /// Writes what waits unwritten without waiting; true once nothing does.
  bool write_unsent();
  clock::time_point now() const { return env_.now(); }
  void connect();
  void lost(const std::string& why);
  void take_inbox();
  void publish_some();
  /// Publishes `msg` (plain TCP: into the writer's batch, written by flush_batch), stamped with
  /// `wall_us` unless it was before.
  bool publish(outgoing_message& msg, std::uint64_t wall_us);
  /// Takes the first message of `mode`'s queue out and refuses it with `error`; false.
  bool refuse_front(delivery_mode mode, const std::string& error);
  void flush_batch();
  bool ensure_declared(const outgoing_message& msg, std::string& error);
  void read_frames();
  /// A method frame the broker sent on `channel`: a confirm, a nack, a close, a block.
  void on_method(std::uint16_t channel, const amqp_method_t& method, std::vector<outgoing_message>& nacked);
  /// Messages the broker nacked go out again after 200 ms, in the order they were first published.
  void retry_nacked(std::vector<outgoing_message> nacked);
  /// Marks a message about to be published again (the broker may hold the first copy) and counts it.
  void mark_republished(outgoing_message& m);
  void refuse(outgoing_message&& msg, const std::string& error);
  bool can_publish() const { return queues_.ready(confirms_.size(), cfg_.confirm_window); }
  void publish_pauses();
  void answer_depths();
  /// Replaces the connection when confirms are overdue (config::confirm_timeout).
  void confirms_overdue();

  config cfg_;
  broker_env env_;
  flow_control& flow_;
  inbox<outgoing_message> inbox_;
  pause_publisher pauses_;
  broker_thread thread_;
  std::shared_ptr<strand_loop> loop_;

  /// The publishing connection and what is known of it. Owned by the loop, but for `up` and `node`.
  struct connection {
    std::unique_ptr<amqp_session> session;
    broker_params params;
    net::backoff backoff{net::data_path_retry_initial, net::data_path_retry_max};
    bool ever_connected = false;
    /// The socket may hold frames (confirms, heartbeats, a close): its watch said so, a new
    /// connection, the once-a-second sweep, or the thread's loop (which reads every turn). Reading
    /// it only then spares each publishing turn a read that finds nothing.
    bool readable = true;
    std::atomic<bool> up{false};
    std::atomic<int> node{-1};  ///< the place in the broker address list of the node it is on
  } link_;

  // Owned by the loop.
  frame_writer writer_;
  /// The loop's timed work: (re)connecting, reading the socket whatever its watch says (sweep),
  /// and, once stopping, how long confirms are waited for (drain).
  enum class timer { connect, sweep, drain, count };
  deadlines<timer> timers_;
  publish_queues queues_;
  publish_confirms confirms_{cfg_.confirm_timeout};
  queue_admin admin_{declare_channel, cfg_.quorum};
  publish_replies replies_;
  topic_counter_cache counted_;  ///< this thread's topic counters (every publish counts)
};

}  // namespace dde::mqs
