#pragma once
// A router: owns one pool of identical workers, picks which worker gets each delivery, asks the
// MQS for as many messages as its workers have room for, and acks each message once done.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <nlohmann/json.hpp>

#include "dde/envelope.hpp"
#include "host/mqs_link.hpp"
#include "host/runtime.hpp"
#include "host/plugin_fetcher.hpp"
#include "host/reply_race.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "host/routing.hpp"
#include "host/scale_policy.hpp"

namespace dde::host {


struct router_stats {
  std::uint64_t delivered = 0, done = 0, failed = 0, replies = 0, replies_dropped = 0, restarts = 0;
  // Deliveries the broker had delivered before; at-least-once messages acked after the work.
  std::uint64_t redelivered = 0, acked = 0;
  // Rate-limit governance: messages a worker backed off, retries, dead letters, pool pauses (own, remote).
  std::uint64_t rate_limited = 0, retries = 0, dead_lettered = 0, pauses = 0, remote_pauses = 0;
};

class router : public cell_owner, public topic_sink, public std::enable_shared_from_this<router> {
 public:
  router(boost::asio::io_context& io, std::shared_ptr<mqs_link> link, pool_spec spec);

  /// Where plugin events go (the activator: pluginSwapping, pluginGood), and where copies of each
  /// version that worked are kept so a restarted isolate system can fall back to one. Before start().
  void set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache);
  /// How plugins at http(s) URIs are downloaded (cache directory, CA file). Before prepare().
  void set_fetch_options(fetch_options options);
  ~router();

  /// Gets the plugin ready to load: downloads it, off the Asio threads, when its uri is http(s).
  /// `ready` runs once, on the router's strand, with success or why the pool cannot start.
  void prepare(std::function<void(result<bool>)> ready);
  /// Loads the plugin(s) and constructs every worker; an error leaves nothing running.
  result<bool> start();
  /// Stops pulling, lets in-flight messages finish (up to `timeout`), kills the workers.
  void shutdown(std::chrono::milliseconds timeout, std::function<void()> done);

  // Called from other strands; each posts to the router's strand.
  // topic_sink
  void deliver(std::uint64_t generation, std::uint64_t tag, bool redelivered, nlohmann::json props,
               std::string body) override;
  void deliver_reply(envelope e) override;
  void on_connected() override;
  // cell_owner
  void worker_done(std::size_t index, std::uint64_t delivery_id) override;
  void worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what, std::string new_id) override;
  void worker_rate_limited(std::size_t index, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                           std::string reason, message m) override;
  void worker_up(std::size_t index, std::string id) override;
  void worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) override;
  void enqueue(std::string topic, delivery_mode mode, const envelope& e) override;
  bool claim_reply(const std::string& message_id) override;
  void when_writable(std::function<void()> fn) override;
  const std::string& instance() const override;
  /// RESTART (thesis 3.4.2): fresh instances of every worker, after in-flight messages finish;
  /// `done` gets "" once the swap has begun, or why it cannot.
  void restart_workers(std::function<void(std::string)> done);
  /// KILL (thesis 3.4.2) of one worker (`worker_id`) or of every worker (""): each finishes the
  /// messages it holds, runs before_kill and stays down until a RESTART; the router gives it nothing
  /// more. `done` gets "" and the ids of the workers being killed, or why not.
  void kill_workers(std::string worker_id, std::function<void(std::string, std::vector<std::string>)> done);
  /// Changes the pool's rate and in-flight limit at run time (0 = none); `done` gets "" or why not.
  void set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight,
                std::function<void(std::string)> done);
  /// Governance: a replica of this pool (through the MQS) was rate limited; no starts for `delay`.
  void on_pause(std::chrono::milliseconds delay, std::string reason, std::string origin);
  /// Runs `fn` on the strand with the pool's description (thesis 3.2.2 shape plus counters).
  void describe(std::function<void(nlohmann::json)> fn);

  const pool_spec& spec() const { return spec_; }
  const std::string& topic() const { return topic_; }

 private:
  struct delivery {
    std::uint64_t generation = 0;
    std::uint64_t tag = 0;
    std::vector<std::size_t> pending;  ///< workers that hold it and have not finished it
    bool failed = false;
    std::string sub_key;  ///< its sub-pool
    int attempts = 0;     ///< times it was rate limited so far
    // First-reply-wins pools (scatter-gather, tail-chopping):
    std::string message_id;                       ///< replies to it are claimed ("" = not raced)
    std::shared_ptr<const message> copy;          ///< tail-chopping: what the next worker gets
    std::vector<std::size_t> asked;               ///< workers given a copy so far
    std::size_t succeeded = 0;                    ///< copies done without failing
    bool acked = false;                           ///< acked once answered; later copies change nothing
    std::shared_ptr<boost::asio::steady_timer> chop_timer;
  };
  struct waiting {
    std::uint64_t generation;
    std::uint64_t tag;
    message msg;
  };
  /// Hands `msg` to the workers the routing picks, or holds it (in its sub-pool's queue, or in the
  /// router's queue: at its back, or at its `front` when it came from there). False when it went back
  /// to the router's queue.
  bool dispatch(std::uint64_t generation, std::uint64_t tag, message msg, bool front = false);
  std::vector<std::size_t> pick(const message& msg);
  // First reply wins (router_first_reply.cpp).
  /// A message went to `d.pending`: its replies are claimed from now on; tail-chopping arms its timer.
  void start_race(std::uint64_t delivery_id, delivery& d, const message& msg);
  /// A copy of a raced message finished: acks it once answered, asks the next worker after a failure.
  void settle_copy(std::uint64_t delivery_id, delivery& d, bool failed);
  /// The message's last copy finished: whether it failed (no copy succeeded), and the race is over.
  bool end_race(delivery& d);
  /// Tail-chopping: no answer in time (or a copy failed): a copy to a worker not asked yet.
  void chop(std::uint64_t delivery_id);
  void arm_chop(std::uint64_t delivery_id, delivery& d);
  // Autoscaling by queue depth (router_scaling.cpp).
  void watch_scale();
  void on_depth(std::uint64_t backlog, const std::string& error);
  /// Grows (revives parked slots, then adds new local ones) or shrinks (parks idle slots) to `to`.
  void scale_to(std::size_t to, const std::string& reason);
  /// Slots that take part in the pool: neither parked by the autoscaler nor killed.
  std::size_t active_workers() const;
  bool parked(std::size_t index) const { return index < parked_.size() && parked_[index]; }
  /// Adds a fresh local worker in slot `index` (a new one when index == cells_.size()); false if it cannot.
  bool add_local_worker(std::size_t index);
  nlohmann::json describe_scaling() const;
  /// `failed`: it goes back to the broker (nack) instead of being acked. `proven`: it counts as proof
  /// that the running plugin version works.
  void finish_one(std::size_t index, std::uint64_t delivery_id, bool failed, bool proven = true);
  /// Hands held messages to workers with room (not while the pool is stopping, swapping or restarting).
  void flush_waiting();
  /// Gives every message held in the router back to the broker (the pool stops).
  void give_back_held();
  /// Governance: no message of the pool starts for `delay`; `broadcast` tells the other replicas.
  void pause_pool(std::chrono::milliseconds delay, const std::string& reason, bool broadcast);
  void dead_letter(const message& m, int attempts, const std::string& reason);
  void request_credit();
  /// A local worker cell (sharing the pool's throttle) or a proxy, for slot `index`.
  std::shared_ptr<cell> make_cell(std::size_t index, const std::shared_ptr<worker_plugin>& plugin);
  void check_drained();
  /// Counts a restart against the pool's limit; false when the limit is reached.
  bool allow_restart(std::chrono::milliseconds& backoff);
  void stop_pool(const std::string& why);
  void restart_pool(const std::string& why);
  // Hot deployment (thesis 3.2.1 FileMonitor, 3.3.1).
  void watch_plugin();
  void check_plugin();
  /// Downloads the plugin (conditionally, with the validators of the running version) on the fetcher's
  /// thread; `fn` runs on the strand.
  void fetch_remote(std::function<void(router&, fetch_result)> fn);
  void on_plugin_fetched(fetch_result fetched);
  /// Logs a change of the http(s) plugin's reachability ("" = reachable), once per change.
  void note_fetch_error(const std::string& error);
  /// The local file the running version came from: the plugin path, or its download.
  std::filesystem::path running_file() const;
  /// A plugin error, saying where a downloaded plugin came from.
  std::string with_source(const std::string& error) const;
  /// Builds instances of `plugin` and starts swapping to them; an error (nothing changed) or success.
  /// Killed workers stay down through a new version or a restart unless `revive_killed` (RESTART).
  result<bool> begin_swap(std::shared_ptr<worker_plugin> plugin, bool is_restart, bool revive_killed = false);
  void refuse_version(const std::string& md5, const std::string& why, plugin_failure reason);
  void finish_swap();
  /// The first message done by the running version: keep a copy of it, tell the activator.
  void version_proven();
  // KILL: a slot drains (closed in the ledger), then its instance is stopped; RESTART revives it.
  void begin_kill(std::size_t index);
  /// Stops a draining slot's instance once it holds nothing (or is down already).
  void settle_kill(std::size_t index);
  /// "running", "down", "killing" or "killed", for describe.
  std::string worker_state(std::size_t index) const;
  bool kill_requested(std::size_t index) const {
    return index < kills_.size() && kills_[index] != kill_phase::none;
  }
  // The starvation guard (thesis 3.2.1): PING a worker that holds messages and went quiet.
  void watch_workers();
  void on_pong(std::size_t index, std::uint64_t ping, bool busy, std::chrono::milliseconds busy_for);
  void replace_stuck(std::size_t index);

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<mqs_link> top_;  ///< the isolate system's MQS link
  pool_spec spec_;
  std::string topic_;
  std::shared_ptr<const pool_spec> shared_spec_;
  std::shared_ptr<worker_plugin> plugin_;
  std::shared_ptr<router_plugin> router_plugin_;
  router_plugin::policy_ptr policy_;
  pool_ledger ledger_;
  std::vector<std::shared_ptr<cell>> cells_;
  std::vector<std::string> cell_errors_;
  enum class kill_phase { none, draining, stopping, killed };
  std::vector<kill_phase> kills_;               ///< per slot
  std::vector<std::uint64_t> done_per_worker_;  ///< messages each slot finished, for describe
  std::vector<std::chrono::steady_clock::time_point> last_activity_;
  std::vector<std::uint64_t> ping_out_;  ///< per slot: the PING awaiting its PONG (0: none)
  std::uint64_t next_ping_ = 1;
  std::unique_ptr<boost::asio::steady_timer> guard_timer_;
  std::unordered_map<std::uint64_t, delivery> deliveries_;
  std::deque<waiting> waiting_;
  sub_pool_ledger subs_;
  std::map<std::string, std::deque<waiting>> sub_waiting_;  ///< per key: waiting for room in its sub-pool
  std::size_t sub_held_ = 0;
  std::string pause_reason_;
  std::chrono::steady_clock::time_point announced_until_{};
  std::uint64_t next_delivery_ = 1;
  router_stats stats_;
  /// Messages the pool's workers sent: counted on the workers' strands, hence atomic.
  std::atomic<std::uint64_t> sent_{0};
  reply_race race_;
  std::vector<std::string> deployed_paths_;  ///< workersPaths as deployed (the autoscaler adds slots)
  std::vector<bool> parked_;                 ///< per slot: taken out by the autoscaler
  scale_policy scaler_;
  struct scaling_state {
    std::unique_ptr<boost::asio::steady_timer> timer;
    bool asking = false;
    std::chrono::steady_clock::time_point asked_at{};
    std::uint64_t backlog = 0;
    std::string error;  ///< why the last depth sample failed ("" = it did not)
    std::uint64_t ups = 0, downs = 0;
    std::size_t peak = 0;
    std::deque<nlohmann::json> changes;  ///< the latest changes, newest last
  } scaling_;
  std::deque<std::chrono::steady_clock::time_point> restarts_;
  std::string state_ = "running";
  std::string last_error_;
  bool restarting_pool_ = false;
  struct hot_state {
    std::unique_ptr<boost::asio::steady_timer> timer;
    std::string refused_md5;  ///< a version already refused is not tried again
    std::string state = "running";
    std::string error;
    std::uint64_t swaps = 0;
    long long last_pause_ms = 0;
    bool swapping = false;
    bool swap_killing = false;  ///< the old instances are being stopped
    bool is_restart = false;    ///< a RESTART with the same plugin, not a new version
    std::chrono::steady_clock::time_point swap_started;
    std::shared_ptr<worker_plugin> next_plugin;
    std::vector<std::shared_ptr<cell>> next_cells;
    bool proving = true;  ///< the running version has not finished a message yet
    // An http(s) uri: the running version's download and what the server said about it.
    std::filesystem::path fetched_file;
    std::filesystem::path next_file;  ///< the download being swapped in
    fetch_validators validators;
    bool fetching = false;
    std::string fetch_error;  ///< why the last poll failed ("" = it did not)
  } hot_;
  fetch_options fetch_options_;
  std::unique_ptr<plugin_fetcher> fetcher_;  ///< an http(s) uri's downloads, off the Asio threads
  std::shared_ptr<rate_gate> gate_;  ///< the pool's rate, in-flight limit and governance pause
  std::function<void(nlohmann::json)> events_;
  std::string plugin_cache_;
  bool stopping_ = false;
  std::function<void()> drained_;
  std::unique_ptr<boost::asio::steady_timer> drain_timer_;
};

}  // namespace dde::host
