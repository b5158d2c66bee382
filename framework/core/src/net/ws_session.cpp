#include "ws_session.hpp"

#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>

namespace dde::net {

std::uint64_t next_connection_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1);
}

namespace {
// Writes coalesce queued binary messages up to this size.
constexpr std::size_t max_coalesced = 1 << 20;

std::string endpoint_text(const tcp::socket& s) {
  beast::error_code ec;
  auto ep = s.remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}
}  // namespace

template <class Stream>
ws_session<Stream>::ws_session(Stream&& stream, std::shared_ptr<ws_handler> handler, std::size_t max_message,
                               beast::role_type role, std::chrono::milliseconds idle_timeout,
                               std::shared_ptr<const void> anchor)
    : anchor_(std::move(anchor)),
      ws_(std::move(stream)),
      handler_(std::move(handler)),
      beat_(idle_timeout, ws_.get_executor()),
      max_message_(max_message),
      id_(next_connection_id()) {
  remote_ = endpoint_text(beast::get_lowest_layer(ws_).socket());
  beast::get_lowest_layer(ws_).expires_never();
  websocket::stream_base::timeout t = websocket::stream_base::timeout::suggested(role);
  // A peer that vanishes without a close is noticed: ping when idle, give up after the timeout.
  t.idle_timeout = beat_.idle_timeout;
  t.keep_alive_pings = true;
  ws_.set_option(t);
  // The message limit is ours (do_read), not Beast's read_message_max: Beast fails the connection
  // over it, and its teardown (Boost 1.74) stops draining after one read, so a peer still writing
  // its large message got a TCP reset and often never read the 1009 close frame.
  ws_.read_message_max(0);
  ws_.auto_fragment(false);
  beast::error_code ec;
  beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), ec);
}

template <class Stream>
void ws_session<Stream>::run_server(http::request<http::string_body> req) {
  ws_.async_accept(req, [self = shared_from_this()](beast::error_code ec) {
    if (ec) return;  // the handler never saw this connection
    self->on_open();
  });
}

template <class Stream>
void ws_session<Stream>::set_handshake_headers(const std::map<std::string, std::string>& headers) {
  if (headers.empty()) return;
  ws_.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (auto& [name, value] : headers) req.set(name, value);
  }));
}

template <class Stream>
void ws_session<Stream>::run_client(std::string host, std::string path,
                                    std::function<void(const std::string&)> on_fail) {
  ws_.async_handshake(host, path, [self = shared_from_this(), on_fail](beast::error_code ec) {
    if (ec) {
      on_fail("WebSocket handshake failed: " + ec.message());
      return;
    }
    self->on_open();
  });
}

template <class Stream>
void ws_session<Stream>::on_open() {
  open_ = true;
  handler_->on_open(shared_from_this());
  do_read();
  do_write();
  heartbeat();
}

template <class Stream>
void ws_session<Stream>::do_read() {
  if (finished_ || paused_ || read_in_flight_) return;
  read_in_flight_ = true;
  // A message is read in pieces, never more than one byte past the limit (0: Beast picks a size).
  std::size_t room = max_message_ ? max_message_ + 1 - std::min(buffer_.size(), max_message_) : 0;
  ws_.async_read_some(buffer_, room,
                      beast::bind_front_handler(&ws_session<Stream>::on_read, shared_from_this()));
}

template <class Stream>
void ws_session<Stream>::on_read(beast::error_code ec, std::size_t) {
  read_in_flight_ = false;
  if (ec) {
    std::string reason = ec == websocket::error::closed ? "closed by peer" : ec.message();
    if (ec == websocket::error::closed && !ws_.reason().reason.empty())
      reason += ": " + std::string(ws_.reason().reason.c_str());
    finish(reason);
    return;
  }
  if (max_message_ && buffer_.size() > max_message_) return refuse_too_big();
  if (!ws_.is_message_done()) return do_read();
  std::string data = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  bool binary = ws_.got_binary();
  handler_->on_message(shared_from_this(), std::move(data), binary);
  do_read();
}

template <class Stream>
void ws_session<Stream>::send(std::string data, bool binary) {
  out_.bytes.fetch_add(data.size(), std::memory_order_relaxed);
  // defer, not post: called from a handler of the same io_context (a host's flush), the write
  // continues that handler on its thread instead of waking another one (see top_level.cpp).
  boost::asio::defer(ws_.get_executor(),
                     [self = shared_from_this(), data = std::move(data), binary]() mutable {
                       if (self->finished_ || self->close_.asked) {
                         self->out_.bytes.fetch_sub(data.size(), std::memory_order_relaxed);
                         return;
                       }
                       self->out_.queue.emplace_back(std::move(data), binary);
                       self->do_write();
                     });
}

template <class Stream>
void ws_session<Stream>::do_write() {
  if (!open_ || out_.in_flight || out_.queue.empty() || finished_) return;
  bool binary = out_.queue.front().second;
  out_.writing = std::move(out_.queue.front().first);
  out_.queue.pop_front();
  while (binary && !out_.queue.empty() && out_.queue.front().second && out_.writing.size() < max_coalesced) {
    out_.writing += out_.queue.front().first;
    out_.queue.pop_front();
  }
  out_.in_flight = true;
  ++out_.started;
  ws_.binary(binary);
  ws_.async_write(boost::asio::buffer(out_.writing),
                  beast::bind_front_handler(&ws_session<Stream>::on_write, shared_from_this()));
}

template <class Stream>
void ws_session<Stream>::on_write(beast::error_code ec, std::size_t) {
  out_.in_flight = false;
  out_.bytes.fetch_sub(out_.writing.size(), std::memory_order_relaxed);
  out_.writing.clear();
  if (ec) {
    // The read side reports the end; make sure it notices.
    close_socket();
    return;
  }
  if (close_.asked && out_.queue.empty()) {
    do_close();
    return;
  }
  do_write();
}

template <class Stream>
void ws_session<Stream>::close(std::string reason) {
  boost::asio::post(ws_.get_executor(), [self = shared_from_this(), reason = std::move(reason)] {
    if (self->finished_ || self->close_.asked) return;
    self->close_.asked = true;
    self->close_.reason = reason.substr(0, 120);
    if (!self->open_) {
      self->close_socket();
      return;
    }
    // What was queued before the close still goes out (e.g. an error record explaining it); a close
    // frame must not overlap a write, so on_write starts it once the queue is empty.
    if (self->out_.in_flight) return;
    if (self->out_.queue.empty())
      self->do_close();
    else
      self->do_write();
  });
}

template <class Stream>
void ws_session<Stream>::refuse_too_big() {
  buffer_.consume(buffer_.size());
  close_.asked = true;
  close_.code = websocket::close_code::too_big;
  close_.reason = "a message over " + std::to_string(max_message_) + " bytes";
  // The close handshake (async_close) drains the rest of the message and waits for the peer's close,
  // so the peer reads why. A write in flight starts it when done (on_write); finish drops the queue.
  finish("The WebSocket message exceeded the locally configured limit");
  if (!out_.in_flight) do_close();
}

template <class Stream>
void ws_session<Stream>::do_close() {
  websocket::close_reason cr(close_.code, close_.reason);
  ws_.async_close(cr, [self = shared_from_this()](beast::error_code) { self->close_socket(); });
}

template <class Stream>
void ws_session<Stream>::close_socket() {
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

template <class Stream>
void ws_session<Stream>::pause_reading(bool paused) {
  boost::asio::post(ws_.get_executor(), [self = shared_from_this(), paused] {
    self->paused_ = paused;
    // Pongs are only read by a pending read: without one the idle timer would take a paused peer
    // (backpressure, say while the broker is down) for a vanished one and close it after 20 s.
    websocket::stream_base::timeout t;
    self->ws_.get_option(t);
    // (The heartbeat goes on meanwhile, so the peer's timer keeps hearing from us.)
    t.idle_timeout =
        paused ? websocket::stream_base::none() : websocket::stream_base::duration(self->beat_.idle_timeout);
    self->ws_.set_option(t);
    if (!paused && self->open_) self->do_read();
  });
}

template <class Stream>
void ws_session<Stream>::heartbeat() {
  // The peer pings after half its idle timeout without a byte from us and gives up after the other
  // half. Its ping may not reach us in time: it waits behind the data it sends while we read slowly
  // (a backlogged MQS reads a producing host at the broker's pace), or unread while we are paused.
  // So the peer does not rely on our answers: every quarter we write something, if only a beat.
  // The beat is an unsolicited pong (RFC 6455 5.5.3: a unidirectional heartbeat, not answered). A
  // ping would be: Beast answers it from the peer's read, which then waits for the peer's write in
  // flight, stuck while we read slowly, and reads nothing more meanwhile, so the peer timed out.
  beat_.timer.expires_after(beat_.idle_timeout / 4);
  beat_.timer.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || !self->open_ || self->close_.asked || self->finished_) return;
    // One beat at a time: a peer that reads nothing completes none.
    if (self->out_.started == self->beat_.writes_at_beat && !self->beat_.in_flight) {
      self->beat_.in_flight = true;
      self->ws_.async_pong({}, [self](beast::error_code) { self->beat_.in_flight = false; });
    }
    self->beat_.writes_at_beat = self->out_.started;
    self->heartbeat();
  });
}

template <class Stream>
void ws_session<Stream>::finish(const std::string& reason) {
  if (finished_) return;
  finished_ = true;
  beat_.timer.cancel();
  out_.queue.clear();
  if (open_) handler_->on_close(shared_from_this(), reason);
}

template class ws_session<beast::tcp_stream>;
template class ws_session<tls_stream>;

}  // namespace dde::net
