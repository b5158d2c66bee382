#pragma once
/// \file
/// Dead letters as the MQS's HTTP endpoints show and move them (GET /dlq, POST /dlq/replay,
/// POST /dlq/purge; mqs/PROTOCOL.md, "Dead letters"): how a message of `dde.dead.<topic>` reads, what
/// is published to `<topic>` to replay it, and the requests' checks. Pure: no broker, no socket.
///
/// Two kinds arrive in a dead-letter queue: the host's own (`router::dead_letter`: the whole envelope
/// as JSON in the body with `deadLetter: {reason, attempts, pool, at, md5}`, no AMQP properties) and
/// the broker's (the original message with its properties, plus `x-death` and `x-first-death-*`).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dde/protocol/mqs_props.hpp"
#include "dde/protocol/result.hpp"

namespace dde::mqs {

/// The prefix of every dead-letter queue: `dde.dead.<topic>`.
inline constexpr std::string_view dead_letter_prefix = "dde.dead.";
/// Bytes of a payload shown in a listing; longer ones are cut and marked `truncated`.
constexpr std::size_t dead_letter_body_shown = 4096;
/// GET /dlq answers at most this many messages (`limit`, default 100).
constexpr std::size_t dlq_default_limit = 100, dlq_max_limit = 1000;
/// Messages one replay or purge looks through (held unacknowledged meanwhile): ids further down
/// the queue are reported missing.
constexpr std::size_t dlq_max_scan = 10000;

/// One message read (basic.get) from a dead-letter queue.
struct dead_message {
  message_props
      props;  ///< messageId, appId, contentType, string-valued headers (x-first-death-reason among them)
  std::string body;
  std::uint64_t tag = 0;        ///< the delivery tag of the basic.get
  std::uint32_t remaining = 0;  ///< messages ready in the queue after this one (basic.get-ok's count)
  // From the first entry of the broker's x-death header (absent on the host's own dead letters).
  std::string death_reason, death_queue;
  std::int64_t death_time_s = 0;     ///< x-death "time" (AMQP timestamp: seconds)
  std::int64_t death_count = 0;      ///< x-death "count"
  std::int64_t delivery_count = -1;  ///< the x-delivery-count header, -1 when absent
};

/// What a dead letter shows: {id, source, reason, attempts, md5?, pool, at?, size, body, encoding?,
/// truncated?}. `topic` is the pool's queue (the dead-letter queue without its prefix).
nlohmann::json describe_dead_letter(const dead_message& m, std::string_view topic);

/// The message's id: its messageId, or the id inside a host's dead letter; "" when it has none.
std::string dead_letter_id(const dead_message& m);

/// What a replay publishes to `topic`: the pool's normal message, split as any enqueue is.
struct replay_message {
  message_props props;
  std::string body;
};
/// The host's dead letter: its envelope without `deadLetter`; the broker's: its body and properties
/// without the broker's death headers, x-delivery-count and the old x-dde-published-us.
replay_message replay_of(const dead_message& m, std::string_view topic);

/// A request of the DLQ endpoints, checked.
struct dlq_request {
  std::string topic;                      ///< the pool's queue, `<system>.<pool>`
  std::vector<std::string> ids;           ///< only these (empty: see `all`)
  bool all = false;                       ///< every message (replay: `"all": true`; purge without ids)
  std::size_t limit = dlq_default_limit;  ///< list: messages shown; replay: at most this many moved
  std::optional<std::string> id;          ///< list: only the message with this id
};

/// GET /dlq?topic=T&limit=N&id=X.
result<dlq_request> parse_dlq_query(std::string_view target);
/// POST /dlq/replay body: {"topic", "ids":[...]} or {"topic", "all":true}, optional "limit".
result<dlq_request> parse_replay_body(std::string_view body);
/// POST /dlq/purge body: {"topic", "ids"?: [...]}; without ids every message goes.
result<dlq_request> parse_purge_body(std::string_view body);

/// True when `text` is well-formed UTF-8.
bool valid_utf8(std::string_view text);

}  // namespace dde::mqs
