#pragma once
// Reading a message's AMQP basic properties back into message_props, in the host's form
// (mqs/src/broker_props.hpp): the one reader of deliveries (dequeuer) and of basic.get (the
// dead-letter desk).
#include <amqp.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "broker_props.hpp"
#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {

inline std::string text_of(amqp_bytes_t b) { return std::string(static_cast<const char*>(b.bytes), b.len); }

inline bool key_is(amqp_bytes_t key, std::string_view name) {
  return key.len == name.size() && std::equal(name.begin(), name.end(), static_cast<const char*>(key.bytes));
}

/// An integer field of any width (the broker's headers use several); nullopt for other kinds.
inline std::optional<std::int64_t> integer_of(const amqp_field_value_t& v) {
  switch (v.kind) {
    case AMQP_FIELD_KIND_I8: return v.value.i8;
    case AMQP_FIELD_KIND_U8: return v.value.u8;
    case AMQP_FIELD_KIND_I16: return v.value.i16;
    case AMQP_FIELD_KIND_U16: return v.value.u16;
    case AMQP_FIELD_KIND_I32: return v.value.i32;
    case AMQP_FIELD_KIND_U32: return v.value.u32;
    case AMQP_FIELD_KIND_I64: return v.value.i64;
    case AMQP_FIELD_KIND_U64:
    case AMQP_FIELD_KIND_TIMESTAMP: return std::int64_t(v.value.u64);
    default: return std::nullopt;
  }
}

/// The id, sender, content type, string headers and publish stamp of `p` into `out`; every header
/// that is neither a string nor the stamp goes to `other` (the dead-letter desk reads x-death).
template <class OtherHeader>
void read_broker_props(const amqp_basic_properties_t& p, message_props& out, OtherHeader&& other) {
  if (p._flags & AMQP_BASIC_MESSAGE_ID_FLAG)
    out.message_id = host_message_id({static_cast<const char*>(p.message_id.bytes), p.message_id.len});
  if (p._flags & AMQP_BASIC_APP_ID_FLAG) out.app_id = text_of(p.app_id);
  if (p._flags & AMQP_BASIC_CONTENT_TYPE_FLAG) out.content_type = text_of(p.content_type);
  if (p._flags & AMQP_BASIC_TIMESTAMP_FLAG) out.published_us = stamp_of_timestamp(p.timestamp);
  if (!(p._flags & AMQP_BASIC_HEADERS_FLAG)) return;
  for (int i = 0; i < p.headers.num_entries; ++i) {
    auto& e = p.headers.entries[i];
    if (e.value.kind == AMQP_FIELD_KIND_UTF8 || e.value.kind == AMQP_FIELD_KIND_BYTES)
      out.headers.emplace_back(text_of(e.key), text_of(e.value.value.bytes));
    else if (key_is(e.key, published_header))  // an older MQS's stamp
      out.published_us = std::uint64_t(std::max<std::int64_t>(integer_of(e.value).value_or(0), 0));
    else
      other(e);
  }
}

}  // namespace dde::mqs
