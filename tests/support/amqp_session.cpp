// amqp_session: connect, log in, open channel 1, report errors as amqp_error.
#include "amqp_session.hpp"

#include <amqp_tcp_socket.h>
#include <sys/time.h>

namespace dde::test::detail {
namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

amqp_session::amqp_session(const std::string& host, std::uint16_t port, const std::string& user,
                           const std::string& password, std::chrono::milliseconds timeout)
    : conn_(amqp_new_connection()) {
  const auto tv = to_timeval(timeout);
  try {
    amqp_socket_t* socket = amqp_tcp_socket_new(conn_);
    if (socket == nullptr) throw amqp_error("amqp_tcp_socket_new failed", 0);
    amqp_set_handshake_timeout(conn_, &tv);
    amqp_set_rpc_timeout(conn_, &tv);
    const int opened = amqp_socket_open_noblock(socket, host.c_str(), port, &tv);
    if (opened != AMQP_STATUS_OK) {
      connection_ok_ = false;
      throw amqp_error("connect " + host + ":" + std::to_string(port) + ": " + amqp_error_string2(opened), 0);
    }
    check(amqp_login(conn_, "/", 0, AMQP_DEFAULT_FRAME_SIZE, 0, AMQP_SASL_METHOD_PLAIN, user.c_str(),
                     password.c_str()),
          "login");
    amqp_channel_open(conn_, channel);
    check_last_rpc("channel.open");
    channel_open_ = true;
  } catch (...) {
    if (connection_ok_) amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(conn_);
    throw;
  }
}

amqp_session::~amqp_session() {
  if (connection_ok_) {
    if (channel_open_) amqp_channel_close(conn_, channel, AMQP_REPLY_SUCCESS);
    amqp_connection_close(conn_, AMQP_REPLY_SUCCESS);
  }
  amqp_destroy_connection(conn_);
}

void amqp_session::check(const amqp_rpc_reply_t& reply, const std::string& what) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return;
    case AMQP_RESPONSE_NONE: connection_ok_ = false; throw amqp_error(what + ": missing RPC reply", 0);
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      connection_ok_ = false;
      throw amqp_error(what + ": " + amqp_error_string2(reply.library_error), 0);
    case AMQP_RESPONSE_SERVER_EXCEPTION: break;
  }
  if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
    // The broker closed the channel: acknowledge so the connection stays usable.
    amqp_channel_close_ok_t close_ok{};
    amqp_send_method(conn_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
    channel_open_ = false;
    throw amqp_error(what + ": channel closed by broker: " + std::to_string(close->reply_code) + " " +
                         to_string(close->reply_text),
                     close->reply_code);
  }
  if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
    amqp_connection_close_ok_t close_ok{};
    amqp_send_method(conn_, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &close_ok);
    channel_open_ = false;
    connection_ok_ = false;
    throw amqp_error(what + ": connection closed by broker: " + std::to_string(close->reply_code) + " " +
                         to_string(close->reply_text),
                     close->reply_code);
  }
  throw amqp_error(what + ": unexpected server method " + std::to_string(reply.reply.id), 0);
}

void amqp_session::check_status(int status, const std::string& what) {
  if (status == AMQP_STATUS_OK) return;
  connection_ok_ = false;
  throw amqp_error(what + ": " + amqp_error_string2(status), 0);
}

void amqp_session::check_last_rpc(const std::string& what) { check(amqp_get_rpc_reply(conn_), what); }

bool can_login(const std::string& host, std::uint16_t port, const std::string& user,
               const std::string& password, std::chrono::milliseconds timeout) {
  try {
    amqp_session session(host, port, user, password, timeout);
    return true;
  } catch (const amqp_error&) {
    return false;
  }
}

}  // namespace dde::test::detail
