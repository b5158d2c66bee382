#pragma once
// What the enqueuer published on its confirming channel and the broker has not yet settled (to be
// confirmed to its host, or published again on a new connection), and whether the broker still
// settles it in time (confirm_watch.hpp).

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "confirm_tracker.hpp"
#include "confirm_watch.hpp"
#include "outgoing_message.hpp"

namespace dde::mqs {

class publish_confirms {
 public:
  using clock = std::chrono::steady_clock;

  explicit publish_confirms(std::chrono::milliseconds confirm_timeout) : watch_(confirm_timeout) {}

  /// Published and not yet settled.
  std::size_t size() const { return tracker_.size(); }
  /// `m` was published on the confirming channel.
  void published(outgoing_message&& m, clock::time_point now) {
    if (tracker_.size() == 0) watch_.waiting(now);
    tracker_.published(std::move(m));
  }
  /// The broker acked (`confirmed`) or nacked `tag` (every tag up to it with `multiple`) on the
  /// confirming channel: the settled messages go to `out` in publish order.
  void settle(std::uint64_t tag, bool multiple, bool confirmed, std::vector<outgoing_message>& out,
              clock::time_point now) {
    tracker_.settle(tag, multiple, out);
    watch_.settled(now, confirmed);
  }
  /// The broker settled something on another channel: it answers.
  void answered(clock::time_point now, bool confirmed) { watch_.settled(now, confirmed); }
  /// Nacks came: why the connection is to be replaced, if they keep coming.
  std::optional<std::string> nacks_came(clock::time_point now) { return watch_.nacks_came(now); }
  /// Why the connection is to be replaced, if confirms are overdue.
  std::optional<std::string> overdue(clock::time_point now) { return watch_.overdue(tracker_.size(), now); }
  void blocked() { watch_.blocked(); }
  void unblocked(clock::time_point now) { watch_.unblocked(now); }
  /// The connection went: what it had not confirmed, in publish order, to be published again.
  std::vector<outgoing_message> connection_lost() {
    watch_.connection_lost();
    return tracker_.reset();
  }

 private:
  confirm_tracker<outgoing_message> tracker_;
  confirm_watch watch_;
};

}  // namespace dde::mqs
