#pragma once
/// \file
/// Encoders of the records the MQS sends (mqs/PROTOCOL.md). The frequent ones (`deliver`,
/// `confirm`) are formatted by hand: topics are validated names, so nothing needs escaping.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "dde/mqs/message_props.hpp"

namespace dde::mqs {

void append_welcome(std::string& out, std::string_view mqs_id);
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

}  // namespace dde::mqs
