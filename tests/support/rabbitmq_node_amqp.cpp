// rabbitmq_node's AMQP helpers: each opens its own short connection.
#include <amqp.h>

#include <vector>

#include "amqp_session.hpp"
#include "dde_test.hpp"

namespace dde::test {
namespace {

using detail::amqp_error;
using detail::amqp_session;

/// Waits for publisher confirms up to `last_tag`; throws on nack or a returned (unroutable) message.
void await_confirms(amqp_session& session, std::uint64_t last_tag) {
  std::uint64_t confirmed = 0;
  while (confirmed < last_tag) {
    amqp_frame_t frame;
    timeval timeout{10, 0};
    session.check_status(amqp_simple_wait_frame_noblock(session.connection(), &frame, &timeout),
                         "await confirms");
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    switch (frame.payload.method.id) {
      case AMQP_BASIC_ACK_METHOD: {
        const auto* ack = static_cast<const amqp_basic_ack_t*>(frame.payload.method.decoded);
        confirmed = ack->multiple ? ack->delivery_tag : std::max(confirmed, ack->delivery_tag);
        break;
      }
      case AMQP_BASIC_NACK_METHOD: throw amqp_error("publish: broker nacked a message", 0);
      case AMQP_BASIC_RETURN_METHOD:
        throw amqp_error("publish: message returned as unroutable (does the queue exist?)", 312);
      case AMQP_CHANNEL_CLOSE_METHOD: {
        amqp_rpc_reply_t reply{};
        reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
        reply.reply = frame.payload.method;
        session.check(reply, "publish");
        break;
      }
      default: break;
    }
  }
}

}  // namespace

std::optional<std::uint32_t> rabbitmq_node::queue_depth(const std::string& queue) {
  auto counts = queue_counts(queue);
  return counts ? std::optional<std::uint32_t>(counts->first) : std::nullopt;
}

std::optional<std::uint32_t> rabbitmq_node::queue_consumers(const std::string& queue) {
  auto counts = queue_counts(queue);
  return counts ? std::optional<std::uint32_t>(counts->second) : std::nullopt;
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> rabbitmq_node::queue_counts(const std::string& queue) {
  amqp_session session(host_, port_, user(), password());
  const auto* ok =
      amqp_queue_declare(session.connection(), session.channel, amqp_cstring_bytes(queue.c_str()),
                         /*passive=*/1, 0, 0, 0, amqp_empty_table);
  try {
    session.check_last_rpc("queue.declare passive " + queue);
  } catch (const amqp_error& e) {
    // A failed passive declare closes the channel (check() acknowledged that); the queue is missing.
    if (e.code() == AMQP_NOT_FOUND) return std::nullopt;
    throw;
  }
  return std::make_pair(ok->message_count, ok->consumer_count);
}

void rabbitmq_node::delete_queue(const std::string& queue) {
  amqp_session session(host_, port_, user(), password());
  amqp_queue_delete(session.connection(), session.channel, amqp_cstring_bytes(queue.c_str()), 0, 0);
  session.check_last_rpc("queue.delete " + queue);
}

void rabbitmq_node::declare_queue(const std::string& queue, bool quorum) {
  declare_queue(queue, quorum, {}, {});
}

void rabbitmq_node::declare_queue(const std::string& queue, bool quorum,
                                  const std::map<std::string, std::string>& strings,
                                  const std::map<std::string, std::int64_t>& integers) {
  amqp_session session(host_, port_, user(), password());
  std::vector<amqp_table_entry_t> entries;
  auto add = [&](const std::string& key) {
    entries.push_back({amqp_cstring_bytes(key.c_str()), {}});
    return &entries.back().value;
  };
  entries.reserve(1 + strings.size() + integers.size());
  if (quorum) {
    auto* v = add("x-queue-type");
    v->kind = AMQP_FIELD_KIND_UTF8;
    v->value.bytes = amqp_cstring_bytes("quorum");
  }
  for (auto& [key, text] : strings) {
    auto* v = add(key);
    v->kind = AMQP_FIELD_KIND_UTF8;
    v->value.bytes = amqp_cstring_bytes(text.c_str());
  }
  for (auto& [key, number] : integers) {
    auto* v = add(key);
    v->kind = AMQP_FIELD_KIND_I64;
    v->value.i64 = number;
  }
  const amqp_table_t args{static_cast<int>(entries.size()), entries.data()};
  amqp_queue_declare(session.connection(), session.channel, amqp_cstring_bytes(queue.c_str()), 0,
                     /*durable=*/1, 0, 0, args);
  session.check_last_rpc("queue.declare " + queue);
}

void rabbitmq_node::publish(const std::string& queue, const std::vector<std::string>& bodies,
                            bool persistent) {
  amqp_session session(host_, port_, user(), password());
  amqp_confirm_select(session.connection(), session.channel);
  session.check_last_rpc("confirm.select");
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = persistent ? 2 : 1;
  for (const auto& body : bodies) {
    const int status = amqp_basic_publish(session.connection(), session.channel, amqp_empty_bytes,
                                          amqp_cstring_bytes(queue.c_str()), /*mandatory=*/1, 0, &props,
                                          amqp_bytes_t{body.size(), const_cast<char*>(body.data())});
    session.check_status(status, "basic.publish to " + queue);
  }
  // Confirmed means routed and, for persistent messages, written: callers may count on it.
  await_confirms(session, bodies.size());
}

std::optional<std::string> rabbitmq_node::get(const std::string& queue) {
  amqp_session session(host_, port_, user(), password());
  const auto reply =
      amqp_basic_get(session.connection(), session.channel, amqp_cstring_bytes(queue.c_str()), 0);
  session.check(reply, "basic.get " + queue);
  if (reply.reply.id == AMQP_BASIC_GET_EMPTY_METHOD) return std::nullopt;
  const auto tag = static_cast<const amqp_basic_get_ok_t*>(reply.reply.decoded)->delivery_tag;
  amqp_message_t message;
  session.check(amqp_read_message(session.connection(), session.channel, &message, 0),
                "read message from " + queue);
  std::string body = detail::to_string(message.body);
  amqp_destroy_message(&message);
  session.check_status(amqp_basic_ack(session.connection(), session.channel, tag, 0), "basic.ack");
  return body;
}

}  // namespace dde::test
