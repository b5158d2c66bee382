#pragma once
// Where the dequeuer's consuming links are opened and closed, off its loop: opening one is a
// connection, its login, a channel, declares, qos and consumes (a handful of broker round trips, 5-10
// ms here, more with TLS or a busy broker), and closing one a cancel or two. On a thread of its own
// once started (or wherever a test says), so that the loop serves every other topic meanwhile: a
// pool being deployed, or a topic consumed again after its connection failed, holds up no other
// topic's deliveries. The links it opened wait here until the loop adopts them.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "amqp_session.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "exit_latch.hpp"
#include "inbox.hpp"

namespace dde::mqs {

/// Each topic's connection has one channel.
constexpr std::uint16_t topic_channel = 1;
/// The tag suffix of a topic's lease-queue consumer, beside its first consumer's tag.
constexpr std::string_view lease_suffix = "lease";

/// A topic's consuming link to open: planned on the loop's thread, opened by the opener, handed back
/// and adopted on the loop's thread.
struct link_plan {
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  std::uint64_t epoch = 0;
  std::string tag;     ///< of the first consumer
  bool first = false;  ///< for the topic's first pull: a refusal goes to the hosts that pulled it
  broker_params params;
  std::vector<queue_spec> specs;          ///< declared in order (the dead-letter queue, then the topic's)
  std::optional<queue_spec> lease_queue;  ///< consumed beside it as "<tag>+<lease_suffix>"
  /// The queues consumed, the first as `tag`, the n-th after it as "<tag>+<n>" (a partitioned
  /// topic's partitions); empty: the topic's own queue.
  std::vector<std::string> queues;
  std::uint16_t prefetch = 0;
  // What became of it.
  std::unique_ptr<amqp_session> session;  ///< consuming on topic_channel when `failed` and `error` are empty
  std::string failed;                     ///< the connection failed (retried after the reconnect backoff)
  std::string error;                      ///< the broker refused (channel level)
  std::vector<std::string> existing;      ///< queues used as they were (other arguments)

  /// The broker operations; `watch` holds the socket while they run (see link_opener::stop).
  void open(const session_opener& open, std::atomic<int>& watch);
};

/// What a topic's link is to be: its own queue (after its dead-letter queue); a partitioned topic's
/// partitions too, one consumer each; an at-least-once topic's lease queue (`lease`: the lease's
/// length, 0: none) unless partitioned; on a cluster, the node tried first (`first_node`, else one the
/// topic's name picks, so topics spread over the nodes).
struct link_shape {
  delivery_mode mode = delivery_mode::at_least_once;
  std::uint32_t partitions = 0;
  std::optional<std::size_t> first_node;
  quorum_placement quorum;
  std::uint16_t prefetch = 0;
  long long lease_ms = 0;
  std::string mqs_id;  ///< names the lease queue
};
/// The plan of `topic`'s link under `epoch` (its first consumer's tag), from the main connection's
/// `params`; `first`: for the topic's first pull.
std::shared_ptr<link_plan> plan_link(const std::string& topic, const link_shape& shape, std::uint64_t epoch,
                                     bool first, const broker_params& params);

/// basic.cancel of each of `tags` on `channel`, then channel.close; the first failure stops it.
amqp_session::result cancel_and_close(amqp_session& s, std::uint16_t channel,
                                      const std::vector<std::string>& tags);

class link_opener {
 public:
  using runner = std::function<void(std::function<void()>)>;

  /// Jobs run on the opener's thread from now on, unless set_runner chose elsewhere.
  void start();
  /// Joins the thread; false when a hung RPC's socket had to be shut down to free it.
  bool stop();
  /// Tests: where jobs run (`run` gets each, to run on any thread, at any time). Before start().
  void set_runner(runner run) { run_ = std::move(run); }
  /// Runs `job` where links are opened: on the opener's thread once started, else where set_runner
  /// says, else now.
  void run(std::function<void()> job);
  /// Opens `plan` (run) and keeps it for take().
  void open(std::shared_ptr<link_plan> plan, const session_opener& open);
  /// Cancels `tags` on `channel` and closes `session` (run).
  void retire(std::unique_ptr<amqp_session> session, std::uint16_t channel, std::vector<std::string> tags);

  /// The links opened since the last take, if the last poll saw some (or none polled).
  std::vector<std::shared_ptr<link_plan>> take() { return opened_.take_seen(); }
  /// What the loop polls for opened links; `saw` records whether the poll found it readable.
  int fd() const { return opened_.fd(); }
  void saw(bool readable) { opened_.saw(readable); }
  /// On an io_context: called at each link opened, instead of writing the eventfd.
  void set_notify(std::function<void()> notify) { opened_.set_notify(std::move(notify)); }

 private:
  void loop();

  broker_thread thread_;
  inbox<std::function<void()>> jobs_;
  inbox<std::shared_ptr<link_plan>> opened_;
  runner run_;
};

}  // namespace dde::mqs
