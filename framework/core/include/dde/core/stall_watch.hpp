#pragma once
/// \file
/// A delivery watchdog. Consumers that silently stop are what users of broker-backed frameworks
/// report most after a fault: the connection is open (its node frozen, a proxy that stopped
/// forwarding) or the far end forgot the consumer, and health checks still say all is well. A topic
/// is suspect when credit for it is out, nothing waits for that credit, and it saw no traffic
/// (delivery or ack) for `limit`; asked, the queue's owner says whether messages are ready. If they
/// are, the topic is stalled: /health reports it (degraded) until it moves again (for one limit at
/// least), the stall is counted, and the caller consumes the topic afresh. The MQS watches each
/// topic's broker consumer (its channel; the broker answers), an isolate system each pool's credit
/// at its MQS (the MQS answers). Bookkeeping on the owner's thread; report() on any thread.

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dde {

class stall_watch {
 public:
  using clock = std::chrono::steady_clock;
  /// A topic consumed here, as its consumer sees it at a sweep.
  struct consumed {
    std::string_view topic;          ///< the caller's (held until sweep returns)
    clock::time_point last_traffic;  ///< its last delivery or ack
    /// Credit for it is out and nothing waits for that credit (the MQS: and its prefetch has room).
    bool waiting = false;
  };

  /// `limit` 0: never suspect anything.
  explicit stall_watch(clock::duration limit) : limit_(limit) {}
  clock::duration limit() const { return limit_; }

  /// Once a second, every topic consumed here: the suspects to ask about (each once, until it moves
  /// again); a stalled topic that moved is stalled no more.
  std::vector<std::string> sweep(clock::time_point now, const std::vector<consumed>& topics);
  /// The answer for suspect `topic`: `ready` messages in its queue, its last traffic now. True when
  /// the topic is stalled (it did not move since it was asked and messages are ready): the caller
  /// consumes it afresh.
  bool answer(const std::string& topic, std::uint64_t ready, clock::time_point last_traffic,
              clock::time_point now);
  /// The stalled topics as /health names them ("a.b for 12000 ms, c.d for 5000 ms"); empty when none.
  std::string report(clock::time_point now) const;

 private:
  struct suspect {
    clock::time_point traffic_when_asked{};
    bool asked = false;
    clock::time_point next_ask{};  ///< not asked again before
    /// Answers in a row that found its queue empty: an idle topic is asked again one limit later,
    /// then 2, 4 and at most 8 limits later, so that many idle topics cost little.
    std::uint32_t empty_answers = 0;
    std::optional<clock::time_point> stalled_since;  ///< its last traffic before the stall
    clock::time_point detected{};                    ///< when an answer made it a stall
    std::uint64_t swept = 0;                         ///< the last sweep that kept it
  };
  clock::duration limit_;
  /// Only topics suspected lately; updated in place, as most of a sweep's topics (thousands of idle
  /// pools whose hosts wait with credit) stay suspects from one sweep to the next.
  std::map<std::string, suspect, std::less<>> suspects_;
  std::uint64_t sweeps_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, clock::time_point> stalled_;  ///< for report(), from other threads
};

}  // namespace dde
