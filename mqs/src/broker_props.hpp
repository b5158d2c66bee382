#pragma once
/// \file
/// How the MQS writes a message's properties for the broker, and reads them back: the same
/// message_props (mqs/PROTOCOL.md *Props*), in fewer bytes.
///
/// RabbitMQ (3.10 measured here) keeps a message's properties on its queue's heap when they are at
/// most 64 bytes, and as an off-heap binary above that, which its garbage collection (on dirty
/// schedulers) makes about twice the broker CPU per message consumed: 25 against 12 µs at
/// prefetch 64 (bench/suite's broker CPU column). A DDE message's id (a UUID, 36 characters) and
/// sender already took 59 of those 64 bytes; the publish stamp as a header (`x-dde-published-us`,
/// 32 bytes) pushed every message over. So, on the broker only:
/// - a message id that is a lowercase canonical UUID travels as `~` and its 16 bytes in 22 characters
///   of base64url (RFC 4648 section 5), and is read back as the same UUID text;
/// - the publish stamp is AMQP's `timestamp` property (8 bytes), in microseconds since the epoch.
/// Read back, a `timestamp` below 10^12 is another publisher's whole seconds (AMQP's convention), one
/// below 10^15 milliseconds, and an integer `x-dde-published-us` header (`published_header`: an
/// older MQS's stamp) is read as before.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {

/// The header of a message the MQS published again because the broker never confirmed the copy
/// before (the connection was lost, or the broker nacked it): the broker may hold both copies, and
/// neither is flagged redelivered by it. The dequeuer turns the header into the delivery's
/// `redelivered` flag and drops it, so a worker sees every copy that may be a second one flagged.
inline constexpr std::string_view resent_header = "x-dde-resent";
/// Adds resent_header to `props` (once).
void mark_resent(message_props& props);
/// Drops resent_header from `props`; whether it was there.
bool take_resent_mark(message_props& props);

/// The message id as the broker gets it: a lowercase canonical UUID compacted into `storage` (23
/// characters; the view points there), anything else `id` itself.
std::string_view broker_message_id(std::string_view id, std::array<char, 23>& storage);

/// The same, as a string.
std::string broker_message_id(std::string_view id);

/// The inverse: `~` and 22 base64url characters of 16 bytes back to the UUID text; anything else
/// (another publisher's id) unchanged.
std::string host_message_id(std::string_view broker_id);

/// The publish stamp in microseconds from an AMQP `timestamp`: values below 10^12 are whole seconds
/// (another publisher's, by AMQP's convention), below 10^15 milliseconds (some clients send those),
/// larger ones an MQS's microseconds.
std::uint64_t stamp_of_timestamp(std::uint64_t timestamp);

}  // namespace dde::mqs
