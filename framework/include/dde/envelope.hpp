#pragma once
/// \file
/// The envelope: what travels through the broker for one message (the AMQP body).
/// JSON: {"id","from","to","replyTo"?,"ask"?:{"instance","worker"},"inReplyTo"?,"toWorker"?,
///        "body"? | "bin"? (base64), "deadLetter"?}. A body that is not a DDE envelope is read as a plain payload.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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
  bool is_bytes = false;
};

std::string encode_envelope(const envelope& e);

/// Decodes `data`. A payload that is not a DDE envelope (no "id" and "from") becomes the body of
/// an envelope from "external", so plain AMQP publishers can feed a pool.
envelope decode_envelope(std::string_view data);

/// The message a worker sees for an envelope.
message to_message(envelope e, bool redelivered);

/// The envelope a message came in (for forwarding it, e.g. to a remote worker).
envelope to_envelope(const message& m);

std::string base64_encode(std::string_view in);
/// Decodes base64; returns false on bad input.
bool base64_decode(std::string_view in, std::string& out);

}  // namespace dde
