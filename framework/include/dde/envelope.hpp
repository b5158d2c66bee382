#pragma once
/// \file
/// The envelope: what travels through the broker for one message.
/// At the broker (split_envelope): the AMQP body is the payload alone and the rest goes in AMQP
/// properties (mqs/PROTOCOL.md, "props"). Whole, as JSON (encode_envelope: remote workers, dead
/// letters, older senders): {"id","from","to","replyTo"?,"ask"?:{"instance","worker"},"inReplyTo"?,
/// "toWorker"?, "traceparent"?, "body"? | "bin"? (base64), "deadLetter"?}. A body that is neither is read as
/// a plain payload.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dde/message.hpp"

namespace dde {

struct envelope {
  std::string id;
  std::string from;
  std::string to;
  std::string reply_to;
  std::string ask_instance;  ///< set by `ask`: the asking isolate-system instance
  std::string ask_worker;    ///< set by `ask`: the asking worker
  std::string in_reply_to;   ///< on a reply to an ask: the asked message's id
  std::string to_worker;     ///< on a reply to an ask: the worker that asked
  nlohmann::json body;
  std::string bytes;
  /// On a message in a dead-letter queue (`dde.dead.<topic>`): why it is there
  /// (`{"reason","attempts","pool","at"}`), null otherwise.
  nlohmann::json dead_letter;
  /// Times the message failed before and came back through a delay queue (a pool's `retry`); 0 first.
  int attempt = 0;
  /// The W3C traceparent (www.w3.org/TR/trace-context); empty when untraced. A malformed one is dropped when
  /// read.
  std::string traceparent;
  bool is_bytes = false;
};

std::string encode_envelope(const envelope& e);

/// The sender of a message that names none: a payload that is not a DDE envelope, or DDE's
/// properties with an empty "appId".
inline constexpr std::string_view external_sender = "external";

/// Decodes `data`. A payload that is not a DDE envelope (no "id" and "from") becomes the body of
/// an envelope from `external_sender`, so plain AMQP publishers can feed a pool.
envelope decode_envelope(std::string_view data);

/// An envelope as the broker carries it. RabbitMQ keeps a message's body and properties on its queue's
/// heap when each is at most 64 bytes and as reference-counted off-heap binaries above that, which
/// costs the broker about twice the CPU per message (measured: raw 64-byte publishes 54,000 msg/s,
/// 65-byte ones 23,000). So the envelope is not wrapped around the payload: the payload is the AMQP
/// body as it is, and the rest goes in the properties, the common fields in the fixed ones
/// (message-id = id, app-id = from, content-type application/octet-stream for bytes) and the rare
/// ones in the headers table (to when the topic does not say it, replyTo, inReplyTo, toWorker,
/// askInstance, askWorker, deadLetter, attempt, traceparent).
struct broker_message {
  std::string props;    ///< the record header's "props": a JSON object (mqs/PROTOCOL.md)
  std::string payload;  ///< the AMQP body: the body's JSON text, or the bytes as they are
};
broker_message split_envelope(const envelope& e, std::string_view topic);

/// Joins a delivery from `topic` back into an envelope. `props` is the deliver record's "props"
/// (null when the message had none: the payload is then read by decode_envelope, so whole JSON
/// envelopes and plain AMQP payloads still arrive as before); an "app-id" alone names the sender.
envelope join_envelope(const nlohmann::json& props, std::string_view topic, std::string payload);

/// A delivery's properties as typed fields (what the host reads from a deliver record without a
/// JSON tree): `app_id` empty stands for props without an "appId" (the payload is then read by
/// decode_envelope); `headers` the string-valued headers, or null for none.
struct delivery_props {
  std::string_view message_id, app_id, content_type;
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;
};
/// As above, from typed properties.
envelope join_envelope(const delivery_props& props, std::string_view topic, std::string payload);

/// A delivery's properties, owned: what a deliver record's "props" says.
struct delivered_props {
  std::string message_id, app_id, content_type;              ///< `app_id` empty: the props had no "appId"
  std::vector<std::pair<std::string, std::string>> headers;  ///< the string-valued ones

  /// The properties as join_envelope reads them (valid while this is).
  delivery_props view() const {
    return {message_id, app_id, content_type, headers.empty() ? nullptr : &headers};
  }
};
/// What join_envelope(props.view(), topic, payload) gives, with the id and the sender moved out of
/// `props` instead of copied.
envelope join_envelope(delivered_props&& props, std::string_view topic, std::string payload);
/// Reads a deliver record's "props" as they come (another publisher's included): the string
/// members and string-valued headers, whatever their number or size; anything else is skipped. An
/// "appId" that says nothing still marks DDE's properties: `app_id` is then `external_sender`.
void read_delivered_props(const nlohmann::json& j, delivered_props& out);

/// The message a worker sees for an envelope (its fields moved out of `e`).
message to_message(envelope&& e, bool redelivered);
/// The message a worker sees for an envelope (a copy).
message to_message(const envelope& e, bool redelivered);

/// The envelope a message came in (for forwarding it, e.g. to a remote worker).
envelope to_envelope(const message& m);

}  // namespace dde
