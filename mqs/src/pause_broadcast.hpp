#pragma once
/// \file
/// A pool-wide pause as it travels between MQS processes: the JSON body an MQS publishes to the
/// `dde.governance` fanout exchange when a host sends `pause`, and how a receiver turns it back
/// into a remaining time (mqs/PROTOCOL.md, "Pauses").

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dde::mqs {

/// The fanout exchange every MQS declares, publishes pauses to and binds its own queue to.
inline constexpr std::string_view governance_exchange = "dde.governance";

struct pause_broadcast {
  std::string topic;
  std::int64_t ms = 0;           ///< the pause as the host asked for it, 1..max_pause_ms
  std::int64_t deadline_ms = 0;  ///< when it ends: wall clock, ms since the Unix epoch
  std::string reason;
  std::string origin;  ///< "<mqs id>/<host instance>" of the host that asked
  std::string mqs;     ///< the MQS that published it, so it can skip its own echo
};

/// Wall-clock milliseconds since the Unix epoch.
std::int64_t epoch_ms_now();

/// The JSON body of a broadcast.
std::string encode_pause_broadcast(const pause_broadcast& p);

/// A decoded broadcast, or what is wrong with the body.
struct decoded_pause_broadcast {
  std::optional<pause_broadcast> pause;
  std::string error;  ///< set when `pause` is empty
};

/// Decodes and validates a body (anyone may publish to the exchange: nothing is trusted).
decoded_pause_broadcast decode_pause_broadcast(std::string_view body);

/// How long a received pause still runs at wall-clock `now_ms`: the time left to its deadline,
/// capped at its `ms`. A deadline that is not in the future means the clocks of the two machines
/// disagree (or the message came very late): it is not trusted and the full `ms` is used, since
/// pausing too long costs throughput while pausing too short costs penalties.
std::chrono::milliseconds remaining_time(const pause_broadcast& p, std::int64_t now_ms);

}  // namespace dde::mqs
