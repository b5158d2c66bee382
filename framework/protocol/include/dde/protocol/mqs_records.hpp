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

void append_welcome(std::string& out, std::string_view mqs_id);
/// A `deliver` record: `props` as a "props" object, and its `published_us` (when set) as `published`.
void append_deliver(std::string& out, std::string_view topic, std::uint64_t tag, bool redelivered,
                    std::string_view body, const message_props& props = {});
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
  std::string mqs;  ///< the MQS's id
};
/// A delivery; its body is the record's body.
struct deliver_record {
  std::string topic;
  std::uint64_t tag = 0;
  bool redelivered = false;
  nlohmann::json props;  ///< the AMQP properties as JSON (parse_props reads them), null for none
  /// When the MQS first published it (µs since the epoch, the publishing MQS's wall clock:
  /// mqs/PROTOCOL.md *Publish stamp*); 0 when it has no stamp (e.g. published by something else).
  std::uint64_t published_us = 0;
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

/// Reads a record header from the MQS (its "props" are moved out of `header`); an error naming the
/// action or field that is wrong.
result<mqs_record> parse_mqs_record(nlohmann::json& header);

}  // namespace dde::mqs
