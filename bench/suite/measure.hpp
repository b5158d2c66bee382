#pragma once
// The measurements the experiments are made of, each on the real deployment path (pools deployed
// through the registry on activator nodes, isolate systems talking to dde-mqs, dde-mqs to RabbitMQ),
// and the matching raw rabbitmq-c measurement.
#include <string>
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

/// Production throughputs (msg/s), 0 when not measured or failed.
struct production {
  double at_isolates = 0;  ///< messages / time the producer workers took to send them all
  double at_broker = 0;    ///< messages / time until the queue held them all
};

/// `producers` producer workers (spread over the nodes) send `n` messages of `size` bytes to
/// `s.system/consumer`. With `at_broker`, waits until the queue holds them all (nothing consumes);
/// else until the producers finished sending. Stops the producer systems afterwards.
production produce(bench_cluster& c, const setup& s, long n, int producers, int size, bool at_broker);

/// Deploys `consumers` consumer workers (spread over the nodes; `credits` each) on `s.system/consumer`.
/// Returns the nodes used, for stop_systems.
int start_consumers(bench_cluster& c, const setup& s, int consumers, int credits);
/// Waits until the consumers handled `n` messages; their throughput from the first to the last, or 0.
double await_consumed(bench_cluster& c, const setup& s, long n);
/// The payload size of the first message in `queue` (left in it), as the broker holds it; -1 when
/// the queue is empty or missing.
long payload_bytes(bench_cluster& c, const std::string& queue);
/// Shuts `system` down on nodes [0, nodes) and deletes `queue` (if given).
void stop_systems(bench_cluster& c, const std::string& system, int nodes, const std::string& queue = "");

/// Request-reply: `requesters` requester workers (one ask in flight each, `asks` each) against a
/// supplier pool of `suppliers` workers. An ask unanswered within 5 s counts as lost.
struct request_reply {
  double rate = 0;  ///< replies per second over all requesters
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;
  long lost = 0;  ///< asks unanswered within 5 s (the requester then asks the next)
  long late = 0;  ///< of those, answered later (within 10 s more): stalled, not lost
};
request_reply ask(bench_cluster& c, const setup& s, int requesters, int suppliers, long asks);

/// The raw baseline: `producers` connections publish `n` messages of `size` bytes to a fresh queue of
/// the mode's kind; then (if consumers > 0) `consumers` connections with `prefetch` consume them,
/// acking each message (`consume`); then the same again, acking with `multiple` every prefetch/2
/// messages (`consume_best`: the best a raw client does here).
struct raw_flow {
  double produce = 0, produce_client = 0, consume = 0, consume_best = 0;
};
raw_flow raw_produce_consume(bench_cluster& c, const std::string& mode, long n, int size, int producers,
                             int consumers, int prefetch);
/// The raw baseline with producers and consumers running at the same time.
raw_flow raw_simultaneous(bench_cluster& c, const std::string& mode, long n, int producers, int consumers,
                          int prefetch);
/// The raw request-reply baseline.
request_reply raw_ask(bench_cluster& c, const std::string& mode, int requesters, int suppliers, long asks);

}  // namespace dde::bench
