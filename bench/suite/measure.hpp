#pragma once
// The measurements the experiments are made of, each on the real deployment path (pools deployed
// through the registry on activator nodes, isolate systems talking to dde-mqs, dde-mqs to RabbitMQ),
// and the matching raw rabbitmq-c measurement.
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench_cluster.hpp"

namespace dde::bench {

/// Where the pools of one measurement go: their system name, delivery mode and MQS URLs (pool j of a
/// measurement attaches to mqs[j % mqs.size()]); stats files land in `stats_dir`.
struct setup {
  std::string system;
  std::string mode;
  std::vector<std::string> mqs;
  std::filesystem::path stats_dir;
};

/// Creates `go`, which the workers wait for, once `n` of them say `field` in their stats files
/// `prefix*` (or 3 s on).
void release_together(const std::filesystem::path& go, const std::filesystem::path& stats_dir,
                      const std::string& prefix, const std::string& field, long n);
/// Deploys `consumers` consumer workers spread over the nodes (one pool per node used) with `args`;
/// returns how many nodes got one.
int deploy_consumers(cluster_api& c, const setup& s, int consumers, int credits, const nlohmann::json& args);

/// Production throughputs (msg/s), 0 when not measured or failed.
/// The wall clock, µs since the epoch (what the workers' stats files are stamped with).
std::int64_t now_us();

struct production {
  double at_isolates = 0;      ///< messages / time the producer workers took to send them all
  double at_broker = 0;        ///< messages / time until the queue held them all
  std::int64_t filled_us = 0;  ///< with `at_broker`: when the queue held them all (µs since the epoch)
};

/// `producers` producer workers (spread over the nodes) send `n` messages of `size` bytes to
/// `s.system/consumer`. With `at_broker`, waits until the queue holds them all (nothing consumes);
/// else until the producers finished sending. Stops the producer systems afterwards.
/// `started`, when given, is called once every producer is up and before they start sending.
production produce(cluster_api& c, const setup& s, long n, int producers, int size, bool at_broker,
                   const std::function<void()>& started = {});

/// Deploys `consumers` consumer workers (spread over the nodes; `credits` each) on `s.system/consumer`.
/// Returns the nodes used, for stop_systems.
int start_consumers(cluster_api& c, const setup& s, int consumers, int credits);
/// The same for a filled queue: the consumers start together, as a raw client's connections do,
/// once each holds its first message (or 3 s after the last deploy; not each as its node starts it, beside
/// the others still starting, which counted the deployment's stagger in the rate). With `not_before_us`, not
/// before then.
int start_consumers_together(cluster_api& c, const setup& s, int consumers, int credits,
                             std::int64_t not_before_us = 0);
/// How long a filled queue rests before its consumers, ours and raw alike, start draining it. A
/// RabbitMQ 3.10 classic queue process left idle about a second moves its backlog to a slower form
/// and drains it several times slower (bench/profile/rest.sh), and does so at times during a fill
/// too: drained at once, one run of the raw client goes four times faster than the next. Both
/// rested, the broker is in the same state for both, and the figures compare the clients.
constexpr std::chrono::seconds backlog_rest{3};
/// Waits until the consumers handled `n` messages; their throughput from the first to the last, or 0.
double await_consumed(cluster_api& c, const setup& s, long n);
/// What the consumers of `s` sustained after their first second (see steady_rate), once they are done.
double consumed_steady(const setup& s);
/// Prints what a stalled point leaves behind: the queue's depth, each MQS's view, pools, warnings.
void explain_stall(cluster_api& c, const setup& s);
/// The payload size of the first message in `queue` (left in it), as the broker holds it; -1 when
/// the queue is empty or missing.
long payload_bytes(cluster_api& c, const std::string& queue);
/// Shuts `system` down on nodes [0, nodes) and deletes `queue` (if given).
void stop_systems(cluster_api& c, const std::string& system, int nodes, const std::string& queue = "");

/// Request-reply: `requesters` requester workers (one ask in flight each, `asks` each) against a
/// supplier pool of `suppliers` workers. An ask unanswered within 5 s counts as lost.
struct request_reply {
  double rate = 0;  ///< replies per second over all requesters
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  long lost = 0;  ///< asks unanswered within 5 s (the requester then asks the next)
  long late = 0;  ///< of those, answered later (within 10 s more): stalled, not lost
};
request_reply ask(cluster_api& c, const setup& s, int requesters, int suppliers, long asks);

/// Polls `ready` every `period` on a thread of its own, from construction until it holds once: a
/// tight poll, so a recovery is timed from the moment the peer came back, not from a coarser wait's
/// next look.
class readiness_probe {
 public:
  readiness_probe(std::function<bool()> ready, std::chrono::milliseconds period);
  ~readiness_probe();
  readiness_probe(const readiness_probe&) = delete;
  readiness_probe& operator=(const readiness_probe&) = delete;
  /// Waits up to `timeout` for the first success; the wall-clock µs at which that attempt began
  /// (the peer was accepting then), or 0.
  std::int64_t wait(std::chrono::milliseconds timeout);

 private:
  std::atomic<std::int64_t> ready_us_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Experiment 8: how long consuming takes to resume after an outage. A producer pool (1 worker,
/// `rate` msg/s, `count` messages) and a consumer pool (2 workers) in one isolate system on node 0,
/// at-least-once, on `s.mqs.front()`. Once about a second of messages was consumed, `inject`
/// breaks something, repairs it and returns the wall-clock µs from which the repaired peer accepted
/// connections (0: it did not come back). Then waits until the consumers' longest gap ends after that
/// moment (they resumed) and until they hold every sequence number.
struct recovery {
  bool resumed = false;
  double resume_s = 0;  ///< from ready to the first message consumed after the outage
  double outage_s = 0;  ///< the consumers' longest gap between two messages that ended after the fault
  long count = 0;       ///< messages the producer was asked for
  long unique = 0;      ///< distinct sequence numbers consumed
  long duplicates = 0;  ///< consumed more than once (at-least-once allows them)
  /// Wall-clock µs, to read beside the daemons' logs: the last message before the outage,
  /// the repaired peer accepting connections, the first message after the gap.
  std::int64_t stopped_us = 0, ready_us = 0, resumed_us = 0;
  /// Every message was consumed before the fault took effect (its injection was late: a loaded
  /// machine): nothing was measured, and the run is to be repeated.
  bool flow_ended_first = false;
};
recovery measure_recovery(cluster_api& c, const setup& s, double rate, long count,
                          const std::function<std::int64_t()>& inject);

/// The raw baseline: `producers` connections publish `n` messages of `size` bytes to a fresh queue of
/// the mode's kind; then (if consumers > 0) `consumers` connections with `prefetch` consume them,
/// acking each message (`consume`); then the same again, acking with `multiple` every prefetch/2
/// messages (`consume_best`: the best a raw client does here).
struct raw_flow {
  double produce = 0, produce_client = 0, consume = 0, consume_best = 0;
  double consume_best_steady = 0;  ///< the best client's rate after its first second
  double broker_us_best = 0;       ///< the broker's CPU µs per message while the best client consumed
};

/// The CPU time (user + system) of process `pid`, sampled every 5 ms from its construction until
/// `between` is first called: what it used per span of wall-clock time, so a figure covers only
/// the messages' flow and not what was set up around it.
class cpu_meter {
 public:
  explicit cpu_meter(int pid);  // not copyable: it owns its sampling thread
  ~cpu_meter();
  /// CPU seconds used between two wall-clock instants (µs since the epoch); stops sampling.
  double between(std::int64_t from_us, std::int64_t to_us);

 private:
  void stop();
  struct sample {
    std::int64_t wall_us;
    double cpu_s;
  };
  int pid_;
  std::atomic<bool> stop_{false};
  std::vector<sample> samples_;
  std::thread thread_;
};
/// The raw baseline of a filled queue drained: each consumer starts once the filled queue rested for
/// `rest`, as long as ours did (a RabbitMQ classic queue left idle a second hibernates, and drains
/// several times slower after: comparing a rested backlog with a fresh one measures the broker).
raw_flow raw_produce_consume(cluster_api& c, const std::string& mode, long n, int size, int producers,
                             int consumers, int prefetch, std::chrono::milliseconds rest = {});
/// The raw baseline with producers and consumers running at the same time.
raw_flow raw_simultaneous(cluster_api& c, const std::string& mode, long n, int producers, int consumers,
                          int prefetch);
/// The raw request-reply baseline.
request_reply raw_ask(cluster_api& c, const std::string& mode, int requesters, int suppliers, long asks);

}  // namespace dde::bench
