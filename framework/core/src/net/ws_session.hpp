#pragma once
// A WebSocket connection over Beast, used by the server and the client. Private header.

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "dde/net/ws.hpp"

namespace dde::net {

namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
/// The TLS stream under https and wss.
using tls_stream = beast::ssl_stream<beast::tcp_stream>;

std::uint64_t next_connection_id();

/// One WebSocket over `Stream`: `beast::tcp_stream` (ws) or `tls_stream` (wss). Both are
/// instantiated in ws_session.cpp only.
template <class Stream>
class ws_session : public ws_connection, public std::enable_shared_from_this<ws_session<Stream>> {
 public:
  /// `anchor` is kept alive as long as the session (the SSL context under a TLS stream).
  /// `idle_timeout`: a peer heard from for none of it is taken for gone (see `heartbeat`).
  ws_session(Stream&& stream, std::shared_ptr<ws_handler> handler, std::size_t max_message,
             beast::role_type role, std::chrono::milliseconds idle_timeout,
             std::shared_ptr<const void> anchor = nullptr);

  /// Server side: completes the upgrade of `req`, then reads.
  void run_server(http::request<http::string_body> req);
  /// Client side: performs the handshake, then reads; `on_fail` if the handshake fails.
  void run_client(std::string host, std::string path, std::function<void(const std::string&)> on_fail);
  /// Client side, before `run_client`: extra headers on the handshake.
  void set_handshake_headers(const std::map<std::string, std::string>& headers);

  void send(std::string data, bool binary) override;
  void close(std::string reason) override;
  void pause_reading(bool paused) override;
  std::size_t queued_bytes() const override { return out_.bytes.load(std::memory_order_relaxed); }
  const std::string& remote() const override { return remote_; }
  std::uint64_t id() const override { return id_; }

 private:
  void on_open();
  void do_read();
  void on_read(beast::error_code ec, std::size_t bytes);
  void do_write();
  void on_write(beast::error_code ec, std::size_t bytes);
  void finish(const std::string& reason);
  /// A message over `max_message_`: the close handshake with 1009, draining the rest.
  void refuse_too_big();
  void do_close();
  void close_socket();
  /// Every quarter of the idle timeout: a beat (an unsolicited pong) when nothing else was written
  /// since the last turn, so the peer, whose idle timer only sees bytes it reads, always hears from
  /// us, even when it sends nothing we answer (its pings wait behind its data while we read slowly,
  /// or unread while we are paused). AMQP's heartbeats work the same way.
  void heartbeat();

  using std::enable_shared_from_this<ws_session<Stream>>::shared_from_this;
  std::shared_ptr<const void> anchor_;
  websocket::stream<Stream> ws_;
  std::shared_ptr<ws_handler> handler_;
  beast::flat_buffer buffer_;
  /// What is to be written, and what is being written.
  struct outgoing {
    std::deque<std::pair<std::string, bool>> queue;  ///< messages, binary or not
    std::string writing;                             ///< one message, or binary ones coalesced
    bool in_flight = false;
    std::uint64_t started = 0;          ///< writes started
    std::atomic<std::size_t> bytes{0};  ///< queued or being written (any thread reads it)
  } out_;
  /// The heartbeat (see heartbeat()).
  struct beating {
    beating(std::chrono::milliseconds idle_timeout, const boost::asio::any_io_executor& ex)
        : idle_timeout(idle_timeout), timer(ex) {}
    std::chrono::milliseconds idle_timeout;
    boost::asio::steady_timer timer;
    bool in_flight = false;
    std::uint64_t writes_at_beat = 0;  ///< `out_.started` at the last heartbeat turn
  } beat_;
  bool open_ = false;
  bool finished_ = false;
  bool paused_ = false;
  bool read_in_flight_ = false;
  std::size_t max_message_;  ///< largest message read (0: no limit)
  /// The close we start: once what is queued is written, with this code and reason.
  struct closing {
    bool asked = false;
    websocket::close_code code = websocket::close_code::normal;
    std::string reason;
  } close_;
  std::string remote_;
  std::uint64_t id_;
};

extern template class ws_session<beast::tcp_stream>;
extern template class ws_session<tls_stream>;

}  // namespace dde::net
