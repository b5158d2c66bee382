// HTTP server with WebSocket upgrades: listener -> http_session -> ws_session.
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <map>
#include <nlohmann/json.hpp>

#include "dde/log.hpp"
#include "dde/net/target.hpp"
#include "tls_context.hpp"
#include "ws_session.hpp"

namespace dde::net {
namespace {

struct shared_state {
  server_options options;
  std::map<std::string, std::shared_ptr<ws_handler>, std::less<>> routes;
  async_http_handler http;
  std::shared_ptr<boost::asio::ssl::context> tls;  ///< null: plain http/ws
};

/// Method, target, headers (names lower-cased) and peer of `req`; not its body.
http_request request_head(const http::request<http::string_body>& req, std::string remote) {
  http_request out;
  out.method = std::string(req.method_string());
  out.target = std::string(req.target());
  for (auto& field : req) {
    std::string name(field.name_string());
    for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(field.value());
  }
  out.remote = std::move(remote);
  return out;
}

http_response error_response(int status, std::string_view text) {
  http_response r;
  r.status = status;
  // The text may quote the request (a target need not be UTF-8): replace what is not, never throw.
  r.body = nlohmann::json{{"error", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

/// One HTTP connection over `Stream` (`beast::tcp_stream`, or `tls_stream` after a TLS handshake);
/// an upgrade hands the stream to a `ws_session` of the same kind.
template <class Stream>
class http_session : public std::enable_shared_from_this<http_session<Stream>> {
  static constexpr bool tls = std::is_same_v<Stream, tls_stream>;
  using std::enable_shared_from_this<http_session<Stream>>::shared_from_this;

 public:
  template <class... Args>
  http_session(tcp::socket&& socket, std::shared_ptr<const shared_state> state, Args&... args)
      : stream_(std::move(socket), args...), state_(std::move(state)) {}

  void run() {
    boost::asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (tls) {
        self->do_handshake();
      } else {
        self->do_read();
      }
    });
  }

 private:
  void do_handshake() {
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
    stream_.async_handshake(
        boost::asio::ssl::stream_base::server, [self = shared_from_this()](beast::error_code ec) {
          if (ec) {
            // A plain-text client, a wrong CA or no client certificate: refused, the server goes on.
            // A connect-and-close (a port probe) is not worth a warning.
            bool silent = ec == boost::asio::error::eof || ec == boost::asio::ssl::error::stream_truncated;
            logger("net")->log(silent ? spdlog::level::debug : spdlog::level::warn,
                               "TLS handshake from {} refused: {}", self->endpoint_text(),
                               describe_tls_error(ec, self->stream_.native_handle()));
            beast::error_code ignored;
            beast::get_lowest_layer(self->stream_).socket().close(ignored);
            return;
          }
          self->do_read();
        });
  }

  void do_read() {
    parser_.emplace();
    parser_->body_limit(state_->options.max_http_body);
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&http_session<Stream>::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return do_shutdown();
    if (ec == http::error::body_limit) {
      return write(error_response(413, "request body exceeds " +
                                           std::to_string(state_->options.max_http_body) + " bytes"),
                   false, 11);
    }
    if (ec) return;
    auto req = parser_->release();
    if (state_->options.authorize) {
      // The hook sees the method, target, headers and peer (not the body).
      http_request head = request_head(req, endpoint_text());
      bool upgrade = websocket::is_upgrade(req);
      if (auto refused = state_->options.authorize(head, upgrade))
        return write(std::move(*refused), !upgrade && req.keep_alive(), req.version());
    }
    if (websocket::is_upgrade(req)) {
      auto path = target_path(std::string_view(req.target().data(), req.target().size()));
      auto it = state_->routes.find(path);
      if (it == state_->routes.end())
        return write(error_response(404, "no WebSocket endpoint at " + std::string(path)), false,
                     req.version());
      auto session = std::make_shared<ws_session<Stream>>(
          std::move(stream_), it->second, state_->options.max_ws_message, beast::role_type::server,
          state_->options.ws_idle_timeout, state_->tls);
      session->run_server(std::move(req));
      return;
    }
    http_request in = request_head(req, endpoint_text());
    in.body = std::move(req.body());
    if (!state_->http)
      return write(error_response(404, "no HTTP endpoints here"), req.keep_alive(), req.version());
    // The handler may answer from another thread; the answer comes back to this strand.
    auto self = shared_from_this();
    auto answered = std::make_shared<std::atomic<bool>>(false);
    auto respond = [self, answered, keep_alive = req.keep_alive(),
                    version = req.version()](http_response out) {
      if (answered->exchange(true)) return;
      boost::asio::post(self->stream_.get_executor(),
                        [self, out = std::move(out), keep_alive, version]() mutable {
                          self->write(std::move(out), keep_alive, version);
                        });
    };
    try {
      state_->http(in, respond);
    } catch (const std::exception& e) {
      respond(error_response(500, std::string("internal error: ") + e.what()));
    }
  }

  void write(http_response out, bool keep_alive, unsigned version) {
    auto res =
        std::make_shared<http::response<http::string_body>>(static_cast<http::status>(out.status), version);
    res->set(http::field::server, "dde");
    res->set(http::field::content_type, out.content_type);
    for (auto& [k, v] : out.headers) res->set(k, v);
    res->keep_alive(keep_alive);
    res->body() = std::move(out.body);
    res->prepare_payload();
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
                        if (ec) return;
                        if (!keep_alive) return self->do_shutdown();
                        self->do_read();
                      });
  }

  void do_shutdown() {
    if constexpr (tls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) {
        beast::error_code ignored;
        beast::get_lowest_layer(self->stream_).socket().close(ignored);
      });
      return;
    }
    beast::error_code ec;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_send, ec);
    // Lingering close: read and drop what the client still sends (e.g. the rest of a body too large),
    // so closing does not reset the connection before the client has read our answer.
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
    drain();
  }

  void drain() {
    stream_.async_read_some(boost::asio::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) self->drain();
                            });
  }

  std::string endpoint_text() {
    beast::error_code ec;
    auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
    return ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::array<char, 8192> scratch_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<const shared_state> state_;
};

class listener : public std::enable_shared_from_this<listener> {
 public:
  listener(boost::asio::io_context& io, std::shared_ptr<const shared_state> state)
      : io_(io), acceptor_(boost::asio::make_strand(io)), state_(std::move(state)) {}

  std::error_code open(const tcp::endpoint& ep) {
    beast::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(boost::asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(boost::asio::socket_base::max_listen_connections, ec);
    return ec;
  }

  void run() { do_accept(); }
  void stop() {
    boost::asio::post(acceptor_.get_executor(), [self = shared_from_this()] {
      beast::error_code ec;
      self->acceptor_.close(ec);
    });
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void do_accept() {
    acceptor_.async_accept(
        boost::asio::make_strand(io_), [self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
          if (ec == boost::asio::error::operation_aborted) return;
          if (!ec && self->state_->tls)
            std::make_shared<http_session<tls_stream>>(std::move(socket), self->state_, *self->state_->tls)
                ->run();
          else if (!ec)
            std::make_shared<http_session<beast::tcp_stream>>(std::move(socket), self->state_)->run();
          self->do_accept();
        });
  }

  boost::asio::io_context& io_;
  tcp::acceptor acceptor_;
  std::shared_ptr<const shared_state> state_;
};

class server_impl : public server {
 public:
  server_impl(boost::asio::io_context& io, server_options options) : io_(io) {
    state_ = std::make_shared<shared_state>();
    state_->options = std::move(options);
    if (state_->options.tls.enabled()) state_->tls = make_server_tls_context(state_->options.tls);
  }
  ~server_impl() override { stop(); }

  void add_websocket(std::string path, std::shared_ptr<ws_handler> handler) override {
    state_->routes[std::move(path)] = std::move(handler);
  }
  void set_http(http_handler handler) override {
    state_->http = [handler = std::move(handler)](const http_request& req,
                                                  std::function<void(http_response)> respond) {
      respond(handler(req));
    };
  }
  void set_http_async(async_http_handler handler) override { state_->http = std::move(handler); }

  std::error_code start() override {
    beast::error_code ec;
    auto addr = boost::asio::ip::make_address(state_->options.host, ec);
    if (ec) return ec;
    listener_ = std::make_shared<listener>(io_, state_);
    if (auto e = listener_->open(tcp::endpoint(addr, state_->options.port))) {
      listener_.reset();
      return e;
    }
    port_ = listener_->port();
    listener_->run();
    return {};
  }
  std::uint16_t port() const override { return port_; }
  void stop() override {
    if (listener_) listener_->stop();
    listener_.reset();
  }

 private:
  boost::asio::io_context& io_;
  std::shared_ptr<shared_state> state_;
  std::shared_ptr<listener> listener_;
  std::uint16_t port_ = 0;
};

}  // namespace

std::unique_ptr<server> server::create(boost::asio::io_context& io, server_options options) {
  return std::make_unique<server_impl>(io, std::move(options));
}

}  // namespace dde::net
