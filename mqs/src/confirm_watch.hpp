#pragma once
// Whether the broker still settles what the enqueuer publishes with confirms, or its publishing
// connection is to be replaced: when nacks keep coming (a channel that published to a quorum queue
// while its leader's node was dying can go on being nacked after a new leader is elected, RabbitMQ
// 3.10; a new connection is not), or when no confirm came for --confirm-timeout-ms while messages
// wait for one and the broker does not block publishing.

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace dde::mqs {

class confirm_watch {
 public:
  using clock = std::chrono::steady_clock;
  /// Nacks for this long, no pause between them longer than refusing_pause: the connection goes.
  static constexpr std::chrono::milliseconds refusing_limit{2000};
  static constexpr std::chrono::milliseconds refusing_pause{1000};

  /// `confirm_timeout` 0: confirms are never overdue.
  explicit confirm_watch(std::chrono::milliseconds confirm_timeout) : timeout_(confirm_timeout) {}

  /// A publish went out with none unconfirmed before it: the wait for a confirm starts.
  void waiting(clock::time_point now) { last_settled_ = now; }
  /// The broker settled publishes: confirmed (acked) them, or nacked them.
  void settled(clock::time_point now, bool confirmed) {
    last_settled_ = now;
    if (confirmed) overdue_in_a_row_ = 0;
  }
  /// Nacked publishes came (in one read of the socket). Why the connection is to be replaced, when
  /// nacks kept coming refusing_limit long.
  std::optional<std::string> nacks_came(clock::time_point now);
  /// The broker blocks publishing (a memory or disk alarm): no confirm can come meanwhile.
  void blocked() { blocked_ = true; }
  void unblocked(clock::time_point now) {
    blocked_ = false;
    last_settled_ = now;  // the wait for confirms starts again
  }
  /// The connection went: a new one starts with no nacks and not blocked.
  void connection_lost() {
    refusing_since_.reset();
    blocked_ = false;
  }
  /// With `unconfirmed` publishes waiting: why the connection is to be replaced, when confirms are
  /// overdue. Each replacement that brought no confirm doubles the wait (up to 8 times): when the
  /// queue's leader itself is what does not answer, no node confirms, and moving on only sends
  /// copies again.
  std::optional<std::string> overdue(std::size_t unconfirmed, clock::time_point now);

 private:
  std::chrono::milliseconds timeout_;
  std::optional<clock::time_point> refusing_since_;  ///< none: no nack lately
  clock::time_point last_nack_{};
  clock::time_point last_settled_{};  ///< or when the first of those now unconfirmed went out
  bool blocked_ = false;
  int overdue_in_a_row_ = 0;  ///< replacements for overdue confirms, none confirming since
};

}  // namespace dde::mqs
