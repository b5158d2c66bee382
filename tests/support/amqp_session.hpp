#pragma once
// A short-lived rabbitmq-c connection with one channel, for test helpers.

#include <amqp.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace dde::test::detail {

/// Thrown when an AMQP operation fails; `code` is the broker's reply code (404, 406...) or 0.
class amqp_error : public std::runtime_error {
 public:
  amqp_error(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// Connection + login + channel 1; closed (best effort) on destruction. Throws amqp_error.
class amqp_session {
 public:
  amqp_session(const std::string& host, std::uint16_t port, const std::string& user,
               const std::string& password, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~amqp_session();
  amqp_session(const amqp_session&) = delete;
  amqp_session& operator=(const amqp_session&) = delete;

  amqp_connection_state_t connection() const { return conn_; }
  static constexpr amqp_channel_t channel = 1;

  /// Throws amqp_error describing `reply` unless it is normal. A channel-level exception marks
  /// the channel closed (the broker closed it), so the destructor does not try to close it again.
  void check(const amqp_rpc_reply_t& reply, const std::string& what);
  /// Throws amqp_error unless `status` is AMQP_STATUS_OK.
  void check_status(int status, const std::string& what);
  /// Same as check(amqp_get_rpc_reply(...)).
  void check_last_rpc(const std::string& what);

 private:
  amqp_connection_state_t conn_;
  bool channel_open_ = false;
  bool connection_ok_ = true;
};

/// True when an AMQP login to host:port succeeds within `timeout`.
bool can_login(const std::string& host, std::uint16_t port, const std::string& user,
               const std::string& password, std::chrono::milliseconds timeout);

/// Text of an amqp_bytes_t.
inline std::string to_string(amqp_bytes_t bytes) {
  return {static_cast<const char*>(bytes.bytes), bytes.len};
}

}  // namespace dde::test::detail
