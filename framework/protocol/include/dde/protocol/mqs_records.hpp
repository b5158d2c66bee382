#pragma once
/// \file
/// The records the MQS sends to a host (mqs/PROTOCOL.md): the MQS's encoders and the host's typed
/// decoder. The frequent ones (`deliver`, `confirm`) are formatted by hand: topics are validated
/// names, so nothing needs escaping.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dde/protocol/mqs_props.hpp"
#include "dde/protocol/result.hpp"

namespace dde::mqs {

/// How a `deliver` record's header is written: JSON (every host reads it), or binary for a host
/// whose `hello` asked for it (mqs/PROTOCOL.md *Binary deliver*).
enum class deliver_header { json, binary };

/// The first byte of a binary `deliver` header; a JSON header starts with `{`.
inline constexpr char binary_deliver_mark = '\x01';

/// `binary`: the MQS answers that it sends binary `deliver` headers on this connection.
void append_welcome(std::string& out, std::string_view mqs_id, bool binary = false);
/// A `deliver` record: `props` as a "props" object, and its `published_us` (when set) as `published`;
/// or the same fields in the binary header (a field too long for it: JSON after all).
void append_deliver(std::string& out, std::string_view topic, std::uint64_t tag, bool redelivered,
                    std::string_view body, const message_props& props = {},
                    deliver_header form = deliver_header::json);
void append_confirm(std::string& out, std::span<const std::uint64_t> seqs);
void append_reject(std::string& out, std::span<const std::uint64_t> seqs, std::string_view error);
/// A `pause` record: hosts consuming `topic` should not start its messages for `ms` more.
/// The answer to a `depth`: the queue's ready messages and consumers, or why it has none (`error`).
void append_depth(std::string& out, std::string_view topic, std::uint32_t messages, std::uint32_t consumers,
                  std::string_view error);
void append_pause(std::string& out, std::string_view topic, std::uint64_t ms, std::string_view reason,
                  std::string_view origin);
/// An `error` record; `record` is the index of the offending record, `header` its header if it parsed.
void append_error(std::string& out, std::string_view error, std::optional<std::size_t> record = std::nullopt,
                  const nlohmann::json* header = nullptr);

/// The JSON text sent in reply to a text WebSocket message.
std::string text_error(std::string_view error);

// --- the host's side: a record's header read into its type ---

struct welcome_record {
  std::int64_t protocol = 0;
  std::string mqs;      ///< the MQS's id
  bool binary = false;  ///< it sends binary `deliver` headers on this connection
};
/// A delivery; its body is the record's body.
struct deliver_record {
  std::string topic;
  std::uint64_t tag = 0;
  bool redelivered = false;
  message_props props;  ///< the AMQP properties (the "props" object's string fields; none: all empty)
  /// When the MQS first published it (µs since the epoch, the publishing MQS's wall clock:
  /// mqs/PROTOCOL.md *Publish stamp*); 0 when it has no stamp (e.g. published by something else).
  std::uint64_t published_us = 0;
  bool operator==(const deliver_record&) const = default;
};
struct confirm_record {
  std::vector<std::uint64_t> seqs;
};
struct reject_record {
  std::vector<std::uint64_t> seqs;
  std::string error;
};
struct depth_record {
  std::string topic;
  std::uint64_t messages = 0, consumers = 0;
  std::string error;  ///< why the queue has no depth ("" when it has)
};
struct pause_record {
  std::string topic;
  std::uint64_t ms = 0;
  std::string reason, origin;
};
struct error_record {
  std::string error;
  std::optional<std::size_t> record;  ///< the offending record's index in its batch
  nlohmann::json header;              ///< its header, when it parsed (null otherwise)
};
using mqs_record = std::variant<welcome_record, deliver_record, confirm_record, reject_record, depth_record,
                                pause_record, error_record>;

/// Reads a record header from the MQS; an error naming the action or field that is wrong.
result<mqs_record> parse_mqs_record(const nlohmann::json& header);

/// A `deliver` header exactly as append_deliver writes it, read without a JSON tree (the hot path:
/// one a message). Nothing when the text has any other shape, an escape other than the simple ones,
/// a byte outside printable ASCII or a repeated key: the caller then reads it as JSON, which gives
/// the same record for every header this accepts.
std::optional<deliver_record> parse_deliver_header(std::string_view header);

/// A binary `deliver` header (it starts with binary_deliver_mark); nothing when it is truncated, has
/// bytes left over, an unknown flag or a topic that is not a topic name (as every reading of a
/// `deliver`: the MQS only delivers from queues of valid names).
std::optional<deliver_record> parse_binary_deliver(std::string_view header);

/// Reads one record header's text: a binary deliver, parse_deliver_header, else as JSON (an error when it is
/// not a JSON object with a string "action", or parse_mqs_record's).
result<mqs_record> read_mqs_record(std::string_view header);

}  // namespace dde::mqs
