#pragma once
/// \file
/// A message as a worker sees it: the payload plus who sent it and where a reply goes.

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dde/args.hpp"

namespace dde {

/// A received message. The payload is JSON, or raw bytes for messages sent with `send_bytes`.
/// To send or reply with your own struct, give it a `to_json` (or `NLOHMANN_DEFINE_TYPE_*`): it
/// converts to `nlohmann::json` where `send`/`reply` take one; read it back with `as<T>()`.
class message {
 public:
  message() = default;

  /// The JSON payload (null for a raw-bytes message).
  const nlohmann::json& body() const { return body_; }
  /// The raw payload for a raw-bytes message, or the string value of a string payload.
  std::string_view bytes() const {
    if (is_bytes_) return bytes_;
    if (body_.is_string()) return body_.get_ref<const std::string&>();
    return {};
  }
  bool is_bytes() const { return is_bytes_; }
  /// The JSON payload converted to `T` by its `from_json` (or `NLOHMANN_DEFINE_TYPE_*`). Throws
  /// std::invalid_argument naming this message and why when the payload does not convert; from
  /// `on_receive`, that goes to the pool's supervision like any other exception.
  template <class T>
  T as() const {
    try {
      return body_.get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(
          "message " + id_ + " from " + sender_ + " does not convert: " + detail::json_reason(e) + "; body " +
          body_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 200));
    }
  }
  /// Unique id of this message (a UUID), the same on every redelivery.
  const std::string& id() const { return id_; }
  /// Address of the sending pool, `system/isolate`.
  const std::string& sender() const { return sender_; }
  /// Address that `reply` answers to when set, else the sender.
  const std::string& reply_to() const { return reply_to_; }
  /// True when this message answers an `ask` of this worker.
  bool is_reply() const { return !in_reply_to_.empty(); }
  /// The id of the asked message this one answers.
  const std::string& in_reply_to() const { return in_reply_to_; }
  /// True when this may be a second copy: the broker delivered the message before, or the MQS
  /// published it again because the broker never confirmed an earlier copy (a possible duplicate).
  bool redelivered() const { return redelivered_; }
  /// True when the sender asked (`ask`), so a reply reaches that exact worker instance.
  bool is_ask() const { return !ask_instance_.empty(); }
  /// The W3C trace id (32 hex digits) of the trace this message belongs to, for your own logs; empty
  /// when it carries none (the manual's "Traces").
  std::string_view trace_id() const {
    return traceparent_.size() >= 35 ? std::string_view(traceparent_).substr(3, 32) : std::string_view();
  }

  // Filled in by the host; plugin code reads them through the accessors above.
  nlohmann::json body_;
  std::string bytes_;
  bool is_bytes_ = false;
  std::string id_;
  std::string sender_;
  std::string reply_to_;
  std::string in_reply_to_;
  std::string ask_instance_;
  std::string ask_worker_;
  bool redelivered_ = false;
  std::string traceparent_;  ///< the W3C traceparent it came with (validated), or empty
};

}  // namespace dde
