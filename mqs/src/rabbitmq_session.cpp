#include "rabbitmq_session.hpp"

#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "broker_props.hpp"
#include "dde/protocol/mqs_props.hpp"

namespace dde::mqs {
namespace {

amqp_table_entry_t string_entry(const char* key, const std::string& value) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_UTF8;
  e.value.value.bytes = bytes_of(value);
  return e;
}

amqp_table_entry_t long_entry(const char* key, std::int64_t value) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_I64;
  e.value.value.i64 = value;
  return e;
}

amqp_table_entry_t bool_entry(const char* key, bool value) {
  amqp_table_entry_t e;
  e.key = amqp_cstring_bytes(key);
  e.value.kind = AMQP_FIELD_KIND_BOOLEAN;
  e.value.value.boolean = value;
  return e;
}

}  // namespace

namespace {

// What a connection may take before it counts as failed; the MQS then reconnects with backoff.
constexpr timeval connect_timeout{5, 0};     ///< TCP connect: a broker not accepting by then is down
constexpr timeval handshake_timeout{10, 0};  ///< the TLS and AMQP handshakes
constexpr timeval rpc_timeout{15, 0};        ///< any synchronous method (declare, qos, ...)
constexpr int channel_max = 0;               ///< as many channels as the broker allows
constexpr int frame_max = 131072;            ///< RabbitMQ's default frame size (128 KiB)

/// A socket of `state`, TLS set up as `p` says, connected to the broker; null with `error` on failure.
amqp_socket_t* connect_socket(amqp_connection_state_t state, const broker_params& p, std::string& error) {
  amqp_socket_t* socket = p.tls ? amqp_ssl_socket_new(state) : amqp_tcp_socket_new(state);
  if (!socket) {
    error = p.tls ? "cannot create a TLS socket" : "cannot create a TCP socket";
    return nullptr;
  }
  if (p.tls) {
    if (!p.ca_file.empty() && amqp_ssl_socket_set_cacert(socket, p.ca_file.c_str()) != AMQP_STATUS_OK) {
      error = "cannot use the broker CA file " + p.ca_file;
      return nullptr;
    }
    if (!p.cert_file.empty() &&
        amqp_ssl_socket_set_key(socket, p.cert_file.c_str(), p.key_file.c_str()) != AMQP_STATUS_OK) {
      error = "cannot use the broker client certificate " + p.cert_file + " / key " + p.key_file;
      return nullptr;
    }
    amqp_ssl_socket_set_verify_peer(socket, 1);
    amqp_ssl_socket_set_verify_hostname(socket, 1);
  }
  timeval timeout = connect_timeout;
  int rc = amqp_socket_open_noblock(socket, p.host.c_str(), p.port, &timeout);
  if (rc != AMQP_STATUS_OK) {
    error = std::string(p.tls ? "cannot connect (amqps) to " : "cannot connect to ") + p.host + ":" +
            std::to_string(p.port) + ": " + amqp_error_string2(rc);
    return nullptr;
  }
  return socket;
}

/// Logs in on a connected `state`, naming the connection and asking for the capabilities the MQS
/// uses; what went wrong, empty on success.
std::string login(amqp_connection_state_t state, const broker_params& p) {
  timeval handshake = handshake_timeout, rpc = rpc_timeout;
  amqp_set_handshake_timeout(state, &handshake);
  amqp_set_rpc_timeout(state, &rpc);
  amqp_table_entry_t caps[] = {bool_entry("consumer_cancel_notify", true),
                               bool_entry("connection.blocked", true),
                               bool_entry("publisher_confirms", true)};
  amqp_table_entry_t props[2];
  props[0] = string_entry("connection_name", p.connection_name);
  props[1].key = amqp_cstring_bytes("capabilities");
  props[1].value.kind = AMQP_FIELD_KIND_TABLE;
  props[1].value.value.table = amqp_table_t{3, caps};
  amqp_table_t properties{2, props};
  auto reply =
      amqp_login_with_properties(state, p.vhost.c_str(), channel_max, frame_max, p.heartbeat_s, &properties,
                                 AMQP_SASL_METHOD_PLAIN, p.user.c_str(), p.password.c_str());
  if (reply.reply_type == AMQP_RESPONSE_NORMAL) return {};
  if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION)
    return "login refused: " + amqp_session::describe_close(reply.reply);
  if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
    return std::string("login failed: ") + amqp_error_string2(reply.library_error) +
           (reply.library_error == AMQP_STATUS_CONNECTION_CLOSED ||
                    reply.library_error == AMQP_STATUS_SOCKET_CLOSED
                ? " (wrong user, password or vhost?)"
                : "");
  return "login failed";
}

}  // namespace

std::unique_ptr<rabbitmq_session> rabbitmq_session::open_node(const broker_params& p, std::string& error) {
  amqp_connection_state_t state = amqp_new_connection();
  if (!state) {
    error = "out of memory";
    return nullptr;
  }
  auto s = std::make_unique<rabbitmq_session>(state);
  s->broken_ = true;  // until logged in, a destroy must not try to close politely
  if (!connect_socket(state, p, error)) return nullptr;
  error = login(state, p);
  if (!error.empty()) return nullptr;
  s->broken_ = false;
  s->plain_ = !p.tls;
  return s;
}

std::string rabbitmq_session::write_frames(std::string_view bytes, std::size_t* written) {
  const char* at = bytes.data();
  std::size_t left = bytes.size();
  int err = 0;
  if (written) *written = 0;
  while (left > 0 && err == 0) {
    ssize_t n = ::send(fd(), at, left, MSG_NOSIGNAL);
    if (n > 0) {
      at += n;
      left -= std::size_t(n);
      if (written) *written += std::size_t(n);
    } else if (n == 0) {
      err = EPIPE;
    } else if ((errno == EAGAIN || errno == EWOULDBLOCK) && written) {
      break;  // the caller writes the rest once the socket has room
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // The broker reads slower (or blocks publishers): wait, as rabbitmq-c's own send does.
      pollfd p{fd(), POLLOUT, 0};
      if (::poll(&p, 1, -1) < 0 && errno != EINTR)
        err = errno;
      else if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
        err = EPIPE;
    } else if (errno != EINTR) {
      err = errno;
    }
  }
  if (err == 0) return {};
  broken_ = true;  // part of a frame may have gone: nothing more can be said on this connection
  return std::string("send: ") + std::strerror(err);
}

rabbitmq_session::~rabbitmq_session() {
  if (!broken_) amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
  amqp_destroy_connection(state_);
}

std::uint16_t rabbitmq_session::channel_max() const {
  int m = amqp_get_channel_max(state_);
  return m <= 0 || m > 65535 ? 65535 : static_cast<std::uint16_t>(m);
}

amqp_session::result rabbitmq_session::check(const amqp_rpc_reply_t& reply, std::uint16_t channel,
                                             const char* what) {
  result r;
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return r;
    case AMQP_RESPONSE_NONE: r.error = std::string(what) + ": no reply"; break;
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      r.error = std::string(what) + ": " + amqp_error_string2(reply.library_error);
      break;
    case AMQP_RESPONSE_SERVER_EXCEPTION:
      r.error = std::string(what) + ": " + describe_close(reply.reply);
      if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        r.code = static_cast<amqp_channel_close_t*>(reply.reply.decoded)->reply_code;
        r.channel_closed = true;
        reply_channel_close_ok(channel);
        return r;
      }
      if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        r.code = static_cast<amqp_connection_close_t*>(reply.reply.decoded)->reply_code;
        reply_connection_close_ok();
      }
      break;
  }
  broken_ = true;
  return r;
}

amqp_session::result rabbitmq_session::open_channel(std::uint16_t channel) {
  amqp_channel_open(state_, channel);
  return check(amqp_get_rpc_reply(state_), channel, "channel.open");
}

amqp_session::result rabbitmq_session::close_channel(std::uint16_t channel) {
  return check(amqp_channel_close(state_, channel, AMQP_REPLY_SUCCESS), channel, "channel.close");
}

amqp_session::result rabbitmq_session::confirm_select(std::uint16_t channel) {
  amqp_confirm_select(state_, channel);
  return check(amqp_get_rpc_reply(state_), channel, "confirm.select");
}

amqp_session::result rabbitmq_session::qos(std::uint16_t channel, std::uint16_t prefetch) {
  amqp_basic_qos(state_, channel, 0, prefetch, 0);
  return check(amqp_get_rpc_reply(state_), channel, "basic.qos");
}

amqp_session::result rabbitmq_session::consume(std::uint16_t channel, const std::string& queue,
                                               const std::string& consumer_tag, bool no_ack) {
  amqp_basic_consume(state_, channel, bytes_of(queue), bytes_of(consumer_tag), 0, no_ack, 0,
                     amqp_empty_table);
  return check(amqp_get_rpc_reply(state_), channel, "basic.consume");
}

amqp_session::result rabbitmq_session::cancel(std::uint16_t channel, const std::string& consumer_tag) {
  amqp_basic_cancel(state_, channel, bytes_of(consumer_tag));
  return check(amqp_get_rpc_reply(state_), channel, "basic.cancel");
}

amqp_session::result rabbitmq_session::declare_exchange(std::uint16_t channel, std::string_view name,
                                                        const char* type, bool durable) {
  amqp_exchange_declare(state_, channel, amqp_bytes_t{name.size(), const_cast<char*>(name.data())},
                        amqp_cstring_bytes(type), 0, durable, 0, 0, amqp_empty_table);
  return check(amqp_get_rpc_reply(state_), channel, "exchange.declare");
}

amqp_session::result rabbitmq_session::declare_private_queue(std::uint16_t channel, std::string& name) {
  auto* ok = amqp_queue_declare(state_, channel, amqp_empty_bytes, 0, 0, 1, 1, amqp_empty_table);
  auto r = check(amqp_get_rpc_reply(state_), channel, "queue.declare (server-named)");
  if (r.ok() && ok) name = bytes_text(ok->queue);
  return r;
}

amqp_session::result rabbitmq_session::bind(std::uint16_t channel, const std::string& queue,
                                            std::string_view exchange, const std::string& routing_key) {
  amqp_queue_bind(state_, channel, bytes_of(queue),
                  amqp_bytes_t{exchange.size(), const_cast<char*>(exchange.data())}, bytes_of(routing_key),
                  amqp_empty_table);
  return check(amqp_get_rpc_reply(state_), channel, "queue.bind");
}

amqp_session::result rabbitmq_session::declare(std::uint16_t channel, const queue_spec& spec, bool passive) {
  std::vector<amqp_table_entry_t> args;
  const std::string quorum = "quorum", empty, at_least_once = "at-least-once",
                    reject_publish = "reject-publish";
  if (!passive) {
    if (spec.quorum) {
      args.push_back(string_entry("x-queue-type", quorum));
      if (!spec.placement.leader_locator.empty())
        args.push_back(string_entry("x-queue-leader-locator", spec.placement.leader_locator));
      if (spec.placement.group_size > 0)
        args.push_back(long_entry("x-quorum-initial-group-size", spec.placement.group_size));
    }
    if (spec.delivery_limit) args.push_back(long_entry("x-delivery-limit", *spec.delivery_limit));
    if (spec.dead_letter_queue) {
      args.push_back(string_entry("x-dead-letter-exchange", empty));
      args.push_back(string_entry("x-dead-letter-routing-key", *spec.dead_letter_queue));
    }
    if (spec.expires_ms) args.push_back(long_entry("x-expires", *spec.expires_ms));
    if (spec.message_ttl_ms) args.push_back(long_entry("x-message-ttl", *spec.message_ttl_ms));
    if (spec.dead_letter_at_least_once) {
      args.push_back(string_entry("x-dead-letter-strategy", at_least_once));
      args.push_back(string_entry("x-overflow", reject_publish));
    }
    if (spec.single_active_consumer) args.push_back(bool_entry("x-single-active-consumer", true));
  }
  amqp_table_t table{static_cast<int>(args.size()), args.data()};
  amqp_queue_declare(state_, channel, bytes_of(spec.name), passive, spec.durable, 0, 0, table);
  return check(amqp_get_rpc_reply(state_), channel, passive ? "queue.declare (passive)" : "queue.declare");
}

amqp_session::result rabbitmq_session::queue_depth(std::uint16_t channel, const std::string& queue,
                                                   std::uint32_t& messages, std::uint32_t& consumers) {
  auto* ok = amqp_queue_declare(state_, channel, bytes_of(queue), 1, 0, 0, 0, amqp_empty_table);
  auto r = check(amqp_get_rpc_reply(state_), channel, "queue.declare (passive)");
  if (r.ok() && ok) {
    messages = ok->message_count;
    consumers = ok->consumer_count;
  }
  return r;
}

bool rabbitmq_session::drained() const {
  if (!plain_ || buffered()) return false;
  int waiting = 0;
  return ::ioctl(fd(), FIONREAD, &waiting) == 0 && waiting == 0;
}

int rabbitmq_session::try_read_frame(amqp_frame_t& frame) {
  struct timeval zero {
    0, 0
  };
  int rc = amqp_simple_wait_frame_noblock(state_, &frame, &zero);
  if (rc == AMQP_STATUS_OK) return 1;
  if (rc == AMQP_STATUS_TIMEOUT) return 0;
  broken_ = true;
  return rc < 0 ? rc : -1;
}

void rabbitmq_session::reply_channel_close_ok(std::uint16_t channel) {
  amqp_channel_close_ok_t ok{};
  if (amqp_send_method(state_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) != AMQP_STATUS_OK) broken_ = true;
}

void rabbitmq_session::reply_connection_close_ok() {
  amqp_connection_close_ok_t ok{};
  amqp_send_method(state_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
  broken_ = true;
}

std::string rabbitmq_session::publish(std::uint16_t channel, std::string_view exchange,
                                      std::string_view routing_key, const publish_props& p,
                                      std::string_view body) {
  amqp_basic_properties_t props{};
  props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
  props.delivery_mode = p.delivery_mode;
  auto set = [&](std::string_view value, amqp_flags_t flag, amqp_bytes_t& field) {
    if (value.empty()) return;
    props._flags |= flag;
    field = bytes_of(value);
  };
  set(p.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG, props.content_type);
  // The broker's form of the properties (broker_props.hpp): a compacted id, the stamp as `timestamp`.
  std::array<char, 23> compact_id;
  std::string_view message_id = broker_message_id(p.message_id, compact_id);
  set(message_id, AMQP_BASIC_MESSAGE_ID_FLAG, props.message_id);
  set(p.app_id, AMQP_BASIC_APP_ID_FLAG, props.app_id);
  set(p.expiration, AMQP_BASIC_EXPIRATION_FLAG, props.expiration);
  std::vector<amqp_table_entry_t> entries(p.headers ? p.headers->size() : 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    entries[i].key = bytes_of((*p.headers)[i].first);
    entries[i].value.kind = AMQP_FIELD_KIND_UTF8;
    entries[i].value.value.bytes = bytes_of((*p.headers)[i].second);
  }
  if (p.published_us) {
    props._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
    props.timestamp = p.published_us;
  }
  if (!entries.empty()) {
    props._flags |= AMQP_BASIC_HEADERS_FLAG;
    props.headers = amqp_table_t{int(entries.size()), entries.data()};
  }
  int rc = amqp_basic_publish(state_, channel, bytes_of(exchange), bytes_of(routing_key), 0, 0, &props,
                              bytes_of(body));
  return rc == AMQP_STATUS_OK ? std::string() : std::string("basic.publish: ") + amqp_error_string2(rc);
}

std::string rabbitmq_session::ack(std::uint16_t channel, std::uint64_t tag, bool multiple) {
  int rc = amqp_basic_ack(state_, channel, tag, multiple);
  return rc == AMQP_STATUS_OK ? std::string() : std::string("basic.ack: ") + amqp_error_string2(rc);
}

std::string rabbitmq_session::reject(std::uint16_t channel, std::uint64_t tag, bool requeue) {
  int rc = amqp_basic_reject(state_, channel, tag, requeue);
  return rc == AMQP_STATUS_OK ? std::string() : std::string("basic.reject: ") + amqp_error_string2(rc);
}

}  // namespace dde::mqs
