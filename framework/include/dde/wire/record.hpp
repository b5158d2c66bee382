#pragma once
/// \file
/// The host <-> MQS wire format. A binary WebSocket message is a batch of records; a record is
/// `u32le header_size, header (a JSON object with an "action"), u32le body_size, body`.
/// The body (a message payload) is opaque to the MQS: it goes to the broker as it is.
/// Batches concatenate, so several queued writes can share one WebSocket message.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace dde::wire {

/// 2: enqueue and deliver records carry "props" (the AMQP properties), and hosts send the payload
/// alone as the body.
constexpr int protocol_version = 2;

struct record {
  nlohmann::json header;
  std::string body;
};

/// Appends one record to `out`.
void append_record(std::string& out, const nlohmann::json& header, std::string_view body = {});

/// Result of decoding a batch: the records read, and an error naming the first bad one.
struct decoded_batch {
  std::vector<record> records;
  std::string error;          ///< empty when every record decoded
  std::size_t bad_index = 0;  ///< index of the record the error is about
};

/// Decodes a batch. Each header must be a JSON object with a string "action"; a body larger than
/// `max_body` is an error. Records before the first bad one are returned.
decoded_batch decode_batch(std::string_view data, std::size_t max_body);

/// A batch's records as they are framed, their headers' text unread (views into the data).
struct framed_record {
  std::string_view header, body;
};
struct framed_batch {
  std::vector<framed_record> records;
  std::string error;          ///< empty when the whole batch is framed right
  std::size_t bad_index = 0;  ///< index of the record the error is about
};
/// Splits a batch into records (the framing alone: sizes, the 64 KiB header limit, `max_body`).
/// Records before the first badly framed one are returned.
framed_batch split_batch(std::string_view data, std::size_t max_body);

}  // namespace dde::wire

namespace dde::wire {
/// Appends a record whose header is already JSON text (hot paths build small headers by hand).
void append_raw_record(std::string& out, std::string_view header_json, std::string_view body = {});
}  // namespace dde::wire
