#pragma once
/// \file
/// The records a host sends to the MQS (mqs/PROTOCOL.md): typed requests, the host's encoders and
/// the MQS's validating decoder. Hosts (top_level, ddectl ask) write with the `append` functions,
/// the MQS reads with `parse_request`; the round trip is unit-tested per request.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dde/names.hpp"
#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {

struct hello_request {
  std::int64_t protocol = 0;
  std::string system;
  std::string instance;
  /// `"deliver": "binary"`: the host reads binary `deliver` headers (mqs/PROTOCOL.md *Binary
  /// deliver*); an MQS that does not know the field ignores it and sends JSON.
  bool binary_deliver = false;
};

struct enqueue_request {
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  std::optional<std::uint64_t> seq;  ///< always set for at-least-once
  message_props props;               ///< the AMQP properties to publish with
  bool operator==(const enqueue_request&) const = default;
};

struct pull_request {
  std::string topic;
  delivery_mode mode = delivery_mode::at_least_once;
  std::uint32_t credit = 0;  ///< 1..max_credit
  /// The host's workers consuming the topic (1..max_consumers), 0 when not given: one broker
  /// consumer each, every one with the MQS's prefetch.
  std::uint32_t consumers = 0;
  /// A partitioned pool's: its partitions (1..max_partitions; 0: not partitioned) and the message
  /// body field whose value picks a message's partition (a name).
  std::uint32_t partitions = 0;
  std::string key;
};

struct ack_request {
  std::vector<std::uint64_t> tags;
};

struct nack_request {
  std::vector<std::uint64_t> tags;
  bool requeue = true;
};

struct cancel_request {
  std::string topic;
};

/// Every host consuming `topic`, through any MQS on the broker, should not start its messages for `ms`.
struct pause_request {
  std::string topic;
  std::uint32_t ms = 0;  ///< 1..max_pause_ms
  std::string reason;    ///< at most max_pause_reason characters; may be empty
};

/// How many messages wait in `topic`'s queue (passive queue.declare), for autoscaling.
struct depth_request {
  std::string topic;
};

using request = std::variant<hello_request, enqueue_request, pull_request, ack_request, nack_request,
                             cancel_request, pause_request, depth_request>;

/// Largest credit one `pull` may grant.
constexpr std::uint32_t max_credit = 65535;
/// The most broker consumers one host can stand for on one topic (its workers), and on one topic in all.
constexpr std::uint32_t max_consumers = 256;
/// The most partitions a partitioned pool has.
constexpr std::uint32_t max_partitions = 1024;
/// Longest pause one `pause` may ask for: an hour.
constexpr std::uint32_t max_pause_ms = 3'600'000;
/// Longest `reason` of a pause, in characters (UTF-8 code points).
constexpr std::size_t max_pause_reason = 1000;

/// The number of characters (UTF-8 code points) of valid UTF-8 `text`.
std::size_t utf8_length(std::string_view text);
/// The longest prefix of `text` with at most `chars` characters that ends at a character boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t chars);

/// A validated request, or what is wrong with the header.
struct parsed_request {
  std::optional<request> req;
  std::string error;                        ///< set when `req` is empty
  std::optional<std::uint64_t> reject_seq;  ///< an enqueue's `seq`, to `reject` when the header is bad
};

/// Validates a record header (a JSON object with a string "action").
parsed_request parse_request(const nlohmann::json& header);

/// An `enqueue` header exactly as append_enqueue writes it, read and validated without a JSON tree
/// (the hot path: one a message published). Nothing when the text has any other shape (see
/// parse_deliver_header) or anything parse_request would refuse or change: the caller then reads
/// it as JSON, which gives the same request for every header this accepts and the error otherwise.
std::optional<enqueue_request> parse_enqueue_header(std::string_view header);

/// The `seq` of an enqueue header when it has a usable one: used to `reject` a bad enqueue.
std::optional<std::uint64_t> enqueue_seq(const nlohmann::json& header);

// --- the host's side: each request appended to a batch as one record ---

void append(std::string& out, const hello_request& r);
/// An enqueue with its payload. `props_json` is the properties as a JSON object's text (what
/// `props_json(message_props)` gives, or what split_envelope renders from an envelope; "" for
/// none); `seq` is set for at-least-once.
void append_enqueue(std::string& out, std::string_view topic, delivery_mode mode,
                    std::optional<std::uint64_t> seq, std::string_view props_json, std::string_view body);
/// A pull; a credit above max_credit goes out as several records, a credit of 0 as none.
void append(std::string& out, const pull_request& r);
void append(std::string& out, const ack_request& r);
void append(std::string& out, const nack_request& r);
void append(std::string& out, const cancel_request& r);
/// A pause; its `reason` is cut to max_pause_reason characters (at a character boundary).
void append(std::string& out, const pause_request& r);
void append(std::string& out, const depth_request& r);

}  // namespace dde::mqs
