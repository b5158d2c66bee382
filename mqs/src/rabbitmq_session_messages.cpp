// basic.get, purge, nack and waiting for publisher confirms on the rabbitmq-c session: what the MQS's
// dead-letter desk (dead_letters.cpp) needs beside consuming and publishing.
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

#include "broker_props_amqp.hpp"
#include "dde/protocol/mqs_props.hpp"
#include "rabbitmq_session.hpp"

namespace dde::mqs {
namespace {

/// The first entry of the broker's x-death array (the latest death): reason, queue, time, count.
void read_death(const amqp_field_value_t& v, dead_message& out) {
  if (v.kind != AMQP_FIELD_KIND_ARRAY || v.value.array.num_entries < 1) return;
  auto& first = v.value.array.entries[0];
  if (first.kind != AMQP_FIELD_KIND_TABLE) return;
  auto& t = first.value.table;
  for (int i = 0; i < t.num_entries; ++i) {
    auto& e = t.entries[i];
    bool text = e.value.kind == AMQP_FIELD_KIND_UTF8 || e.value.kind == AMQP_FIELD_KIND_BYTES;
    if (key_is(e.key, "reason") && text)
      out.death_reason = bytes_text(e.value.value.bytes);
    else if (key_is(e.key, "queue") && text)
      out.death_queue = bytes_text(e.value.value.bytes);
    else if (key_is(e.key, "time"))
      out.death_time_s = integer_of(e.value).value_or(0);
    else if (key_is(e.key, "count"))
      out.death_count = integer_of(e.value).value_or(0);
  }
}

/// A basic.get's properties as a dead letter reads them: string headers, the stamp, the broker's counts.
void read_properties(const amqp_basic_properties_t& p, dead_message& out) {
  read_broker_props(p, out.props, [&](const amqp_table_entry_t& e) {
    if (key_is(e.key, "x-death"))
      read_death(e.value, out);
    else if (key_is(e.key, "x-delivery-count"))
      out.delivery_count = integer_of(e.value).value_or(-1);
  });
}

}  // namespace

amqp_session::result rabbitmq_session::get_message(std::uint16_t channel, const std::string& queue,
                                                   dead_message& out, bool& empty) {
  empty = false;
  auto reply = amqp_basic_get(state_, channel, bytes_of(queue), 0);
  auto r = check(reply, channel, "basic.get");
  if (!r.ok()) return r;
  if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) {
    empty = true;
    return r;
  }
  if (reply.reply.id != AMQP_BASIC_GET_OK_METHOD) {
    broken_ = true;
    return {"basic.get: unexpected method " + std::to_string(reply.reply.id)};
  }
  out = {};
  auto* ok = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded);
  out.tag = ok->delivery_tag;
  out.remaining = ok->message_count;
  amqp_message_t message;
  r = check(amqp_read_message(state_, channel, &message, 0), channel, "basic.get (content)");
  if (!r.ok()) return r;  // amqp_read_message frees what it read when it fails
  read_properties(message.properties, out);
  out.body = bytes_text(message.body);
  amqp_destroy_message(&message);
  amqp_maybe_release_buffers(state_);
  return r;
}

amqp_session::result rabbitmq_session::purge(std::uint16_t channel, const std::string& queue,
                                             std::uint32_t& count) {
  auto* ok = amqp_queue_purge(state_, channel, bytes_of(queue));
  auto r = check(amqp_get_rpc_reply(state_), channel, "queue.purge");
  if (r.ok() && ok) count = ok->message_count;
  return r;
}

std::string rabbitmq_session::nack(std::uint16_t channel, std::uint64_t tag, bool multiple, bool requeue) {
  int rc = amqp_basic_nack(state_, channel, tag, multiple, requeue);
  if (rc == AMQP_STATUS_OK) return {};
  broken_ = true;
  return std::string("basic.nack: ") + amqp_error_string2(rc);
}

amqp_session::result rabbitmq_session::wait_confirms(std::uint16_t channel, std::uint64_t last_seq,
                                                     std::chrono::milliseconds timeout) {
  // rabbitmq-c 0.11 has no confirm helper: read basic.ack / basic.nack frames, honouring `multiple`.
  std::vector<bool> confirmed(last_seq + 1, false);
  std::uint64_t below = 1;  // every seq under this one is confirmed
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (below <= last_seq) {
    auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return {"no publisher confirm within " + std::to_string(timeout.count()) + " ms"};
    struct timeval tv {
      static_cast<time_t>(left.count() / 1000000), static_cast<suseconds_t>(left.count() % 1000000)
    };
    amqp_frame_t frame;
    int rc = amqp_simple_wait_frame_noblock(state_, &frame, &tv);
    if (rc == AMQP_STATUS_TIMEOUT) continue;
    if (rc != AMQP_STATUS_OK) {
      broken_ = true;
      return {std::string("waiting for confirms: ") + amqp_error_string2(rc)};
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    auto& method = frame.payload.method;
    if (method.id == AMQP_BASIC_ACK_METHOD && frame.channel == channel) {
      auto* ack = static_cast<amqp_basic_ack_t*>(method.decoded);
      auto upto = std::min<std::uint64_t>(ack->delivery_tag, last_seq);
      if (ack->multiple)
        for (auto s = below; s <= upto; ++s) confirmed[s] = true;
      else if (ack->delivery_tag <= last_seq)
        confirmed[ack->delivery_tag] = true;
      while (below <= last_seq && confirmed[below]) ++below;
    } else if (method.id == AMQP_BASIC_NACK_METHOD && frame.channel == channel) {
      return {"the broker refused (basic.nack) publish " +
              std::to_string(static_cast<amqp_basic_nack_t*>(method.decoded)->delivery_tag)};
    } else if (method.id == AMQP_CHANNEL_CLOSE_METHOD) {
      result r{"while waiting for confirms: " + describe_close(method), true,
               static_cast<amqp_channel_close_t*>(method.decoded)->reply_code};
      reply_channel_close_ok(frame.channel);
      return r;
    } else if (method.id == AMQP_CONNECTION_CLOSE_METHOD) {
      result r{"while waiting for confirms: " + describe_close(method)};
      reply_connection_close_ok();
      return r;
    }
  }
  return {};
}

}  // namespace dde::mqs
