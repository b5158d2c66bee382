#pragma once
/// \file
/// The MQS's delivery watchdog. Consumers that silently stop are what users of broker-backed
/// frameworks report most after a fault: the connection is open (its node frozen, a proxy that
/// stopped forwarding) or the broker forgot the consumer, and health checks still say all is well.
/// A topic is suspect when its hosts hold credit, nothing waits for that credit in the MQS, its
/// consumers' prefetch is not all taken by unacknowledged deliveries, and its channel saw no traffic (delivery or ack) for `limit`; asked, the broker says whether its queue
/// holds ready messages. If it does, the topic is stalled: /health reports it (degraded) until its
/// channel moves again (for one limit at least), the stall is counted, and the dequeuer consumes the topic again on a fresh
/// connection (the next node first). Bookkeeping on the dequeuer's thread; report() on any thread.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dde::mqs {

class stall_watch {
 public:
  using clock = std::chrono::steady_clock;
  /// A topic consumed here, as the dequeuer sees it at a sweep.
  struct consumed {
    std::string topic;
    clock::time_point last_traffic;  ///< its channel's last delivery or ack
    /// Hosts hold credit on it, nothing waits for that credit, and its consumers' prefetch has room.
    bool waiting = false;
  };

  /// `limit` 0: never suspect anything.
  explicit stall_watch(clock::duration limit) : limit_(limit) {}

  /// Once a second, every topic consumed here: the suspects to ask the broker about (each once, until
  /// its channel moves again); a stalled topic whose channel moved is stalled no more.
  std::vector<std::string> sweep(clock::time_point now, const std::vector<consumed>& topics);
  /// The broker's answer for suspect `topic`: `ready` messages in its queue, its channel's last
  /// traffic now. True when the topic is stalled (its channel did not move since it was asked and
  /// messages are ready): the caller consumes it afresh.
  bool answer(const std::string& topic, std::uint64_t ready, clock::time_point last_traffic, clock::time_point now);
  /// The stalled topics as /health names them ("a.b for 12000 ms, c.d for 5000 ms"); empty when none.
  std::string report(clock::time_point now) const;

 private:
  struct suspect {
    clock::time_point traffic_when_asked{};
    bool asked = false;
    clock::time_point next_ask{};  ///< an idle queue is asked again one limit later
    std::optional<clock::time_point> stalled_since;  ///< its channel's last traffic before the stall
    clock::time_point detected{};                    ///< when the broker's answer made it a stall
  };
  clock::duration limit_;
  std::map<std::string, suspect> suspects_;  ///< only topics suspected lately
  mutable std::mutex mutex_;
  std::map<std::string, clock::time_point> stalled_;  ///< for report(), from other threads
};

}  // namespace dde::mqs
