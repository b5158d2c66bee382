#pragma once
// A router: owns one pool of identical workers, hands each delivery to the workers its routing policy
// picks, asks the MQS for as many messages as its workers have room for, and acks each message once
// done. The jobs around that are classes of their own, each unit-tested without the router:
//   routing_policy   which workers get a message (built-in, consistent hash, custom plugin)
//   pool_ledger      credits, room and in-flight counts per worker; sub_pool_ledger per key
//   first_reply      first-reply-wins races of scatter-gather and tail-chopping pools, their copies
//   worker_slots     each worker's instance, KILL phase, error and parking, in step with the ledger
//   supervision      what a worker's failure does, the canary's rule, poison messages
//   worker_watch     the starvation guard's PING/PONG of quiet workers
//   hot_swap         hot deployment and RESTART: the running version, its plugin source, the canary,
//                    the swap of the slots' instances (through swap_host)
//   governance       the pool's rate gate, rate-limit pauses of the pool and its replicas, delayed
//                    retries and dead letters
//   settlement       how a finished message ends at the broker: ack, retry, back to its queue
//   autoscaler       autoscaling by queue depth
//   asks             round trips of the asks its workers send
//   pool_lifecycle   running, restarting after an escalation, halted by supervision, shutting down
//   pool_figures     its counters and latency histograms
//   done_reports, hand_over   the message flow's batches (flow_batches.hpp)
// router.cpp holds the pool's life (start, shutdown, KILL, RESTART, setRate, scaling, describe);
// router_flow.cpp the message flow (credit, hand-over, finishing) and what the workers report (done,
// failed, crashed, rate limited, stuck). Everything runs on the router's strand; timers come from a
// clock a test can drive (clock.hpp).

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "asks.hpp"
#include "autoscaler.hpp"
#include "clock.hpp"
#include "dde/core/metrics.hpp"
#include "dde/envelope.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "deliveries.hpp"
#include "first_reply.hpp"
#include "flow_batches.hpp"
#include "governance.hpp"
#include "held_messages.hpp"
#include "hot_swap.hpp"
#include "mqs_link.hpp"
#include "pool_figures.hpp"
#include "pool_lifecycle.hpp"
#include "pool_ops.hpp"
#include "routing.hpp"
#include "routing_policy.hpp"
#include "runtime.hpp"
#include "settlement.hpp"
#include "supervision.hpp"
#include "worker_slots.hpp"
#include "worker_watch.hpp"

namespace dde::host {

class router : public cell_owner,
               public topic_sink,
               private swap_host,
               private scaling_target,
               private watched_pool,
               private race_pool,
               public std::enable_shared_from_this<router> {
 public:
  router(boost::asio::io_context& io, std::shared_ptr<mqs_link> link, pool_spec spec,
         std::shared_ptr<host::clock> clock = real_clock());
  ~router() override;

  /// Where plugin events go (the activator: pluginSwapping, pluginGood), and where copies of each
  /// version that worked are kept so a restarted isolate system can fall back to one. Before start().
  void set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache);
  /// How plugins at http(s) URIs are downloaded (cache directory, CA file). Before prepare().
  void set_fetch_options(fetch_options options);

  /// Gets the plugin ready to load: downloads it, off the Asio threads, when its uri is http(s).
  /// `ready` runs once, on the router's strand, with success or why the pool cannot start.
  void prepare(std::function<void(result<bool>)> ready);
  /// Loads the plugin(s) and constructs every worker; an error leaves nothing running.
  result<bool> start();
  /// Stops pulling, lets in-flight messages finish (up to `timeout`), kills the workers.
  void shutdown(std::chrono::milliseconds timeout, std::function<void()> done);

  // Called from other strands; each posts to the router's strand.
  // topic_sink
  using topic_sink::deliver;
  void deliver(std::uint64_t generation, std::vector<topic_sink::delivery> batch) override;
  void deliver_reply(envelope e) override;
  void on_connected() override;
  // cell_owner
  void worker_done(std::size_t index, std::uint64_t delivery_id) override;
  void worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what,
                     std::string new_id) override;
  void worker_rate_limited(std::size_t index, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                           std::string reason, message m) override;
  void worker_up(std::size_t index, std::string id) override;
  void worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) override;
  void enqueue(std::string topic, delivery_mode mode, const envelope& e) override;
  bool claim_reply(const std::string& message_id) override;
  void when_writable(std::function<void()> fn) override;
  const std::string& instance() const override;
  /// RESTART (thesis 3.4.2): fresh instances of every worker, after in-flight messages finish;
  /// `done` gets true once the swap has begun, or why it cannot.
  void restart_workers(op_done done);
  /// KILL (thesis 3.4.2) of one worker (`worker_id`) or of every worker (""): each finishes the
  /// messages it holds, runs before_kill and stays down until a RESTART; the router gives it nothing
  /// more. `done` gets the ids of the workers being killed, or why not.
  void kill_workers(std::string worker_id, kill_done done);
  /// Changes the pool's rate and in-flight limit at run time (0 = none); `done` gets true or why not.
  void set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight, op_done done);
  /// Governance: a replica of this pool (through the MQS) was rate limited; no starts for `delay`.
  void on_pause(std::chrono::milliseconds delay, std::string reason, std::string origin);
  /// Runs `fn` on the strand with the pool's description (thesis 3.2.2 shape plus counters).
  void describe(std::function<void(nlohmann::json)> fn);

  /// An ask whose reply has not come after this long ends as timed out (60 s: the last latency bucket).
  static constexpr std::chrono::seconds ask_timeout{60};

  const pool_spec& spec() const { return pool_.spec; }
  const std::string& topic() const { return pool_.topic; }

 private:
  // The message flow (router_flow.cpp).
  /// Hands `w.msg` to the workers the routing picks, or holds it (in its sub-pool's queue, or in the
  /// router's queue: at its back, or at its `front` when it came from there). False when it went back
  /// to the router's queue.
  bool dispatch(held_message&& w, bool front = false);
  /// Hands a message (or a raced copy) to the worker in slot `index`.
  void hand_to(std::size_t index, message&& msg, std::uint64_t delivery_id);
  /// A delivery from the MQS, on the strand: joined into a message and dispatched.
  void take(std::uint64_t generation, topic_sink::delivery& d);
  /// `failed`: it goes back to the broker (nack) instead of being acked. `proven`: the worker's version
  /// handled or failed it (it proves the version, and counts under its md5), rather than the pool.
  void finish_one(std::size_t index, std::uint64_t delivery_id, bool failed, bool proven = true);
  /// Hands held messages to workers with room (not while the pool is stopping, swapping or restarting).
  void flush_waiting();
  /// Gives every message held in the router back to the broker (the pool stops).
  void give_back_held();
  void request_credit();
  // The pool's life (router.cpp).
  /// A local worker cell (sharing the pool's throttle) or a proxy, for slot `index`.
  std::shared_ptr<cell> make_cell(std::size_t index, const std::shared_ptr<worker_plugin>& plugin) override;
  /// Puts a fresh instance in slot `index` (made, not started); false (and the slot down) if it cannot.
  bool renew_slot(std::size_t index);
  bool busy() const { return lifecycle_.stopping() || hot_.swapping() || lifecycle_.restarting(); }
  // The copies of a first-reply-wins pool (first_reply; race_pool).
  std::size_t other_worker(const std::vector<std::size_t>& asked) override {
    return flow_.ledger.select_other(asked);
  }
  void hand_copy(std::uint64_t delivery_id, std::size_t index, message copy) override;
  void ack_answered(std::uint64_t delivery_id) override;
  // Supervision and the starvation guard (router_flow.cpp).
  void stop_pool(const std::string& why);
  /// A pool stopped by supervision starts again (RESTART): fresh workers, a fresh restart budget.
  void revive();
  /// Why an operation is refused while the pool is stopped or shutting down, and what to do.
  std::string stopped_text() const;
  void restart_pool(const std::string& why);
  // What the starvation guard's watch needs (watched_pool).
  bool holding(std::size_t index) const override {
    return flow_.ledger.alive(index) && flow_.ledger.in_flight(index) > 0;
  }
  void ping(std::size_t index, std::function<void(bool, std::chrono::milliseconds)> pong) override;
  void replace_stuck(std::size_t index) override;
  void fail_current(std::size_t index, std::string why) override;
  void answered() override { request_credit(); }
  std::size_t slot_count() const override { return flow_.slots.size(); }
  // The slots as a swap changes them (router.cpp; swap_host).
  std::string worker_id(std::size_t index) const override { return flow_.slots.worker(index).id(); }
  bool swaps(std::size_t index, bool revive_killed) const override;
  void kill_instance(std::size_t index, std::function<void()> gone) override;
  void install(std::size_t index, std::shared_ptr<cell> fresh) override;
  void hold_messages(bool hold) override;
  std::size_t in_flight() const override { return flow_.ledger.total_in_flight(); }
  bool stopping() const override { return lifecycle_.stopping(); }
  bool restarting() const override { return lifecycle_.restarting(); }
  void restarted() override { ++figures_.count().restarts; }
  void later(std::function<void()> fn) override;
  /// `fn` wrapped for a call from another thread, maybe once the router is gone: the wrapped one runs
  /// it on the router's strand (keeping the router until then), or drops the call when it is gone.
  template <class... Args>
  std::function<void(Args...)> on_strand(std::function<void(Args...)> fn) {
    return [weak = weak_from_this(), fn = std::move(fn)](Args... args) {
      if (auto self = weak.lock())
        boost::asio::post(self->strand_,
                          [self, fn, ... args = std::move(args)]() mutable { fn(std::move(args)...); });
    };
  }
  // KILL (router.cpp): a slot drains (closed in the ledger), then its instance is stopped.
  void begin_kill(std::size_t index);
  void settle_kill(std::size_t index);
  // The pool's side of autoscaling (router.cpp; scaling_target).
  std::size_t active_workers() const override { return flow_.slots.active(); }
  std::size_t idle_workers() const override { return flow_.slots.idle(); }
  bool slots_changing() const override { return hot_.busy(); }
  void grow(std::size_t n) override;
  void shrink(std::size_t n) override;
  void ask_depth(std::function<void(std::uint64_t, std::string)> answer) override;
  void scaled() override;
  bool add_local_worker(std::size_t index);

  strand_type strand_;
  std::shared_ptr<host::clock> clock_;
  std::shared_ptr<mqs_link> top_;  ///< the isolate system's MQS link
  /// The pool's spec, the copy its cells share, and its topic.
  struct pool_identity {
    explicit pool_identity(pool_spec s)
        : spec(std::move(s)), topic(spec.addr().topic()), shared(std::make_shared<const pool_spec>(spec)) {}
    pool_spec spec;
    std::string topic;
    std::shared_ptr<const pool_spec> shared;
  } pool_;
  /// The message flow: how a message picks its worker, the credits and the workers' slots, the
  /// deliveries in flight, the messages held back, the batch being handed over and the done reports
  /// being finished.
  struct message_flow {
    explicit message_flow(const pool_spec& spec)
        : ledger(spec.router, std::size_t(spec.credits)), slots(ledger), held(spec.sub_pools) {}
    std::unique_ptr<routing_policy> routing;
    pool_ledger ledger;
    worker_slots slots;
    delivery_table deliveries;
    held_messages held;
    hand_over handing;     ///< a batch from the MQS, gathered per worker
    done_reports reports;  ///< the workers' done reports, finished in bursts
  } flow_{pool_.spec};
  pool_figures figures_;
  /// The asks its workers sent and the replies still to come; per asked pool, their figures.
  asks asks_;
  first_reply first_reply_;
  supervision supervision_;
  worker_watch watch_;
  governance governance_;
  settlement settlement_;
  hot_swap hot_;
  autoscaler scaling_;
  pool_lifecycle lifecycle_;
};

}  // namespace dde::host
