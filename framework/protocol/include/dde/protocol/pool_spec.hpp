#pragma once
/// \file
/// A pool deployment: the thesis's addIsolate body (3.2.2) plus DDE's additions. The one parser of
/// a deploy body: the registry checks a deploy with it, the activator and the isolate systems read
/// theirs with it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "dde/names.hpp"
#include "dde/protocol/result.hpp"

namespace dde {

enum class router_kind {
  round_robin,
  random,
  broadcast,
  smallest_mailbox,
  consistent_hash,
  scatter_gather,  ///< a copy to every worker with room; the first reply wins
  tail_chopping,   ///< a copy to one worker, then to another every `tail_chop_delay` until one replies
  custom
};

/// Whether several workers race on one message and only the first reply goes out.
inline bool first_reply_wins(router_kind k) {
  return k == router_kind::scatter_gather || k == router_kind::tail_chopping;
}

/// What a router does when a worker's on_receive throws (Erlang/Akka supervision).
enum class strategy { resume, restart, stop, escalate };

struct supervision_spec {
  strategy kind = strategy::restart;
  int max_restarts = 10;                    ///< restarts (or escalations) allowed within `within`...
  std::chrono::milliseconds within{60000};  ///< ...after which the pool stops: no crash loop
  std::chrono::milliseconds backoff{0};     ///< delay before a restarted worker takes messages, doubling
  bool dead_letter = false;  ///< the failed message: false = back to the queue, true = to dde.dead.<queue>
  /// A message that made a worker fail this often (at-least-once pools that requeue failed messages)
  /// is not handed out again: it goes to dde.dead.<queue> with the last failure. 0: no limit here
  /// (the queue's own delivery limit still dead-letters it, without the failure).
  int max_failures = 3;
};

/// Rate-limit governance (a worker's `backoff` / `rate_limited`): how often a rate-limited message is
/// tried again before it is dead-lettered, and the longest pause a worker may impose on the pool.
struct backoff_spec {
  int retry_limit = 5;
  std::chrono::milliseconds max_delay{900000};
};

/// Delayed retry (`retry: {"delays": [1000, 5000, 30000]}`): a message that failed goes to a delay
/// queue (dde::delay_topic) for delays[n] after its n+1-th failure, and comes back to the pool's queue
/// when that passes; after the last delay its next failure dead-letters it. Empty: failed messages
/// go back at once (supervision.failedMessage "retry").
struct retry_spec {
  std::vector<std::chrono::milliseconds> delays;
  bool enabled() const { return !delays.empty(); }
};

/// Per-key sub-pools (the seed's poolSelector): a message whose JSON body has `key` = K is started
/// only while fewer than `capacity[K]` (else `default_capacity`; 0 = no limit) messages of K are in
/// flight in the pool; messages of a full sub-pool wait in the router while other keys go on.
struct sub_pool_spec {
  std::string key;  ///< empty: no sub-pools
  std::map<std::string, std::size_t> capacity;
  std::size_t default_capacity = 0;
};

/// A pool's `scale` field: `{"min": 1, "max": 16, "targetBacklogPerWorker": 100, "cooldownMs": 10000,
/// "sampleMs": 1000}` (autoscaling by queue depth).
struct scale_spec {
  std::size_t min = 0;  ///< 0 with max 0: no autoscaling
  std::size_t max = 0;
  std::uint64_t target_backlog = 100;         ///< messages waiting per worker the pool aims at
  std::chrono::milliseconds cooldown{10000};  ///< low backlog this long (and no change) before shrinking
  std::chrono::milliseconds sample{1000};     ///< how often the queue depth is asked for
  bool enabled() const { return max > 0; }
};

/// Canary hot deployment (`canary: {"workers": 1 | "percent": N, "windowMs": 60000, "minMessages": 20,
/// "maxFailureRateIncrease": 0.05}`): a new plugin version first runs on a share of the pool's local
/// workers; once `window` passed and at least `min_messages` went to it, it takes the whole pool, or
/// (its failure rate above the old version's by more than `max_increase`) is rolled back and refused.
struct canary_spec {
  std::size_t workers = 0;  ///< this many workers run the new version (0: `percent` of them)...
  int percent = 0;          ///< ...or this share of them, rounded up (0 with workers 0: no canary)
  std::chrono::milliseconds window{60000};
  std::uint64_t min_messages = 20;
  double max_increase = 0.05;  ///< canary failure rate minus the old version's, at most (0..1)
  bool enabled() const { return workers > 0 || percent > 0; }
  /// How many of `eligible` workers run the new version: at least 1, and one fewer than all while
  /// there are two or more (the old version keeps a worker to compare with).
  std::size_t share_of(std::size_t eligible) const;
};
/// Reads a pool's `canary` field into `out`; "" or a precise error.
std::string parse_canary_spec(const nlohmann::json& field, canary_spec& out);
/// The `canary` field as a deploy body carries it (what parse_canary_spec reads back).
nlohmann::json to_json(const canary_spec& spec);

struct pool_spec {
  std::string system;   ///< isolateSystemName
  std::string isolate;  ///< isolateName
  std::string uri;      ///< plugin: a path, file://, http:// or https:// URI
  std::string sha256;   ///< when set (lower-case hex), a plugin file with another hash is refused
  // Set by the activator when it restarts an isolate system that a new plugin version crashed:
  std::string last_good_copy;  ///< start from this copy of the last version that worked...
  std::string crashed_md5;     ///< ...and refuse this version of `uri`...
  std::string crash_reason;    ///< ...because of this
  std::vector<std::string> workers_paths{"localhost"};
  router_kind router = router_kind::round_robin;
  std::string router_type = "roundRobin";  ///< as given
  std::string router_uri;                  ///< for a custom router
  std::string hash_key;                    ///< consistent-hash: the body field whose value picks the worker
  /// Partitioned: messages go to `count` partitions by the value of their body field `key`; each
  /// partition is handled by one replica of the pool at a time, in publish order (count 0: none).
  struct partitioning {
    std::uint32_t count = 0;
    std::string key;
  } partitions;
  std::chrono::milliseconds tail_chop_delay{200};  ///< tail-chopping: how long a copy has to answer
  bool hot_deployment = true;
  nlohmann::json args = nlohmann::json::object();
  delivery_mode mode = delivery_mode::at_least_once;
  int credits = 8;  ///< messages a worker may hold (handled + waiting)
  supervision_spec supervision;
  std::size_t rate_messages = 0;             ///< rate: at most this many starts... (0: no rate)
  std::chrono::milliseconds rate_per{1000};  ///< ...in every window this long
  std::size_t max_in_flight = 0;             ///< at most this many messages handled at once (0: no limit)
  std::chrono::milliseconds hot_interval{
      1000};                                ///< with hot_deployment: how often the plugin's md5 is checked
  std::chrono::milliseconds ping_after{0};  ///< starvation guard: PING a worker quiet this long (0: off)
  std::chrono::milliseconds pong_timeout{5000};  ///< no PONG within this: the worker is stuck, replace it
  backoff_spec backoff;
  retry_spec retry;
  sub_pool_spec sub_pools;
  scale_spec scale;       ///< autoscaling by queue depth (off unless given)
  canary_spec canary;     ///< with hot_deployment: new versions start as a canary (off unless given)
  bool failover = false;  ///< the registry redeploys it on surviving nodes when its node is lost

  address addr() const { return {system, isolate}; }
  /// Local file path of the plugin (`uri` without `file://`); meaningless for http(s) URIs.
  std::string plugin_path() const;
};
/// The `partitions` field of deploy body `body` into `spec` (after the router and the delivery mode
/// were read: a partitioned pool is at-least-once and routes by its key); an error text, or empty.
std::string parse_partitions(const nlohmann::json& body, pool_spec& spec);

/// Reads a pool spec from its JSON body, with a precise error for each bad field.
/// `default_system` fills a missing isolateSystemName.
result<pool_spec> parse_pool_spec(const nlohmann::json& body, const std::string& default_system = {});

/// The pool as `describe` shows it (thesis 3.2.2: "id", "workerUri", "workersCount", and every field
/// of its spec).
nlohmann::json to_json(const pool_spec& spec);
/// The pool as a deploy body: what parse_pool_spec reads back into the same spec (remote workers are
/// spawned with it).
nlohmann::json to_deploy_body(const pool_spec& spec);
/// The fields of a deploy body that describe the pool (to_deploy_body's keys: what parse_pool_spec
/// reads back), sorted. A deploy from outside may carry only these and its request's own fields.
const std::vector<std::string>& pool_spec_fields();
/// The deploy body of a pool as `describe` showed it (to_json's form, plus what the host adds: workers,
/// stats, its MQS): every field a deploy body has, so a pool deployed again from its description is the
/// pool it was. `system` is the isolate system describe listed it under.
nlohmann::json deploy_body_of_description(const std::string& system, const nlohmann::json& described);
std::string_view to_string(strategy s);

/// Why `value` of field `key` is not a valid name (it becomes part of queue names), or "".
std::string name_error(std::string_view key, const std::string& value);

/// True for a plugin URI that is downloaded (http:// or https://) rather than a local file.
bool is_remote_uri(std::string_view uri);

}  // namespace dde
