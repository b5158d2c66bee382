#pragma once
/// \file
/// The AMQP basic properties a record carries beside its body ("props" in mqs/PROTOCOL.md): what
/// an `enqueue` asks the MQS to publish with, and what a `deliver` reports the broker handed over.
/// Hosts put their envelope's fields here, so the AMQP body is the payload alone.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dde/envelope.hpp"

namespace dde::mqs {

/// The AMQP header in which older MQSs of protocol version 2 stamped a message as they first published
/// it (microseconds since the Unix epoch, a signed 64-bit integer); the MQS reads it so that messages
/// such an MQS left in a queue keep their stamp. Its own stamp is the `timestamp` property
/// (mqs/src/broker_props.hpp). A host's string header of that name is left out.
inline constexpr std::string_view published_header = "x-dde-published-us";

/// `message_id`, `app_id`, `content_type` are AMQP short strings (255 bytes at most); the headers'
/// values are long strings only.
struct message_props : delivered_props {
  /// The MQS's publish stamp, µs (0: none; mqs/PROTOCOL.md *Publish stamp*). Not part of the
  /// "props" object: a `deliver` record reports it as its own field, `published`.
  std::uint64_t published_us = 0;

  /// Nothing a "props" object would show (`published_us` aside).
  bool empty() const {
    return message_id.empty() && app_id.empty() && content_type.empty() && headers.empty();
  }
};

/// The longest messageId, appId, contentType: AMQP short strings.
constexpr std::size_t max_prop_string = 255;
constexpr std::size_t max_prop_headers = 32;
constexpr std::size_t max_prop_header_name = 128;
/// Names and values together: the properties travel in one content-header frame.
constexpr std::size_t max_prop_headers_bytes = 65536;

/// Why `p` breaks the limits above, in parse_props's words ("" when it keeps them): the one check
/// of them, for the JSON reading and the enqueue header's fast scan alike.
std::string props_limits_error(const message_props& p);

/// Reads the "props" object of an enqueue record into `out`: {"messageId"?, "appId"?,
/// "contentType"? (strings of at most 255 bytes), "headers"? (an object of at most 32 string
/// values, names of 1 to 128 bytes, 64 KiB in all)}; a header named `published_header` is left
/// out (only the MQS sets it). Returns why not, or "".
std::string parse_props(const nlohmann::json& j, message_props& out);

/// Appends `,"props":{...}` for a delivery's properties; nothing when `p` is empty.
void append_props_field(std::string& out, const message_props& p);
/// The properties as a JSON object's text (`{...}`), "" when `p` is empty: what an enqueue carries.
std::string props_json(const message_props& p);

inline bool operator==(const message_props& a, const message_props& b) {
  return a.message_id == b.message_id && a.app_id == b.app_id && a.content_type == b.content_type &&
         a.headers == b.headers && a.published_us == b.published_us;
}

}  // namespace dde::mqs
