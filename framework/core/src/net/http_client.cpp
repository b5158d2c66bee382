// Synchronous HTTP(S) client: resolve -> connect -> [TLS handshake] -> write -> read header -> read
// body on a private io_context, so that one deadline covers every step (Beast's timeouts only apply
// to asynchronous operations) and a cancel flag can end it from another thread.
#include "dde/net/http_client.hpp"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <charconv>
#include <fstream>
#include <optional>
#include <type_traits>

#include "dde/core/net/url.hpp"
#include "tls_context.hpp"

namespace dde::net {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

constexpr auto cancel_poll = std::chrono::milliseconds(50);

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

/// Runs one exchange over `Stream` (a TCP stream, or TLS over one); every completion handler either
/// starts the next step or records the end.
template <class Stream>
class exchange {
  static constexpr bool tls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  template <class... StreamArgs>
  exchange(const http_url& url, http::request<http::string_body> req, const http_options& options,
           StreamArgs&... stream_args)
      : url_(url),
        req_(std::move(req)),
        options_(options),
        deadline_(std::chrono::steady_clock::now() + options.timeout),
        stream_(io_, stream_args...) {}

  http_result run() {
    if (options_.cancel) watch_cancel();
    boost::system::error_code not_literal;
    auto address = boost::asio::ip::make_address(url_.host, not_literal);
    if (!not_literal) {
      // An address needs no resolver (asio's would start a thread for this one call).
      connect(std::array<tcp::endpoint, 1>{tcp::endpoint(address, url_.port)});
    } else {
      // The resolver has no timeout of its own: a watchdog cancels it at the deadline.
      watchdog_.expires_at(deadline_);
      watchdog_.async_wait([this](beast::error_code ec) {
        if (!ec) resolver_.cancel();
      });
      resolver_.async_resolve(url_.host, std::to_string(url_.port),
                              [this](beast::error_code ec, tcp::resolver::results_type results) {
                                watchdog_.cancel();
                                on_resolve(ec, std::move(results));
                              });
    }
    io_.run();
    response_.to_file.reset();  // closes the file
    if (!result_.error.empty() && !options_.body_file.empty() && response_.file_opened) {
      std::error_code ignored;
      std::filesystem::remove(options_.body_file, ignored);
    }
    return std::move(result_);
  }

 private:
  void watch_cancel() {
    cancel_timer_.expires_after(cancel_poll);
    cancel_timer_.async_wait([this](beast::error_code ec) {
      if (ec || ended_) return;
      if (!options_.cancel->load()) return watch_cancel();
      cancelled_ = true;
      resolver_.cancel();
      beast::get_lowest_layer(stream_).close();
    });
  }

  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec)
      return fail(ec == boost::asio::error::operation_aborted && !cancelled_
                      ? "timed out resolving " + url_.host
                      : "cannot resolve " + url_.host + ": " + ec.message());
    connect(results);
  }

  template <class Endpoints>
  void connect(const Endpoints& endpoints) {
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    beast::get_lowest_layer(stream_).async_connect(
        endpoints, [this](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return fail("cannot connect to " + where() + ": " + describe(ec));
          if constexpr (tls) {
            do_handshake();
          } else {
            do_write();
          }
        });
  }

  void do_handshake() {
    if constexpr (tls) {
      // SNI carries names only (RFC 6066); the certificate is checked against the name or the address.
      if (!is_ip_literal(url_.host) && !SSL_set_tlsext_host_name(stream_.native_handle(), url_.host.c_str()))
        return fail("cannot set the TLS server name " + url_.host);
      stream_.set_verify_mode(ssl::verify_peer);
      stream_.set_verify_callback(ssl::host_name_verification(url_.host));
      beast::get_lowest_layer(stream_).expires_at(deadline_);
      stream_.async_handshake(ssl::stream_base::client, [this](beast::error_code ec) {
        if (ec) return fail("TLS handshake with " + where() + " failed: " + tls_error(ec));
        do_write();
      });
    }
  }

  void do_write() {
    beast::get_lowest_layer(stream_).expires_at(deadline_);
    http::async_write(stream_, req_, [this](beast::error_code ec, std::size_t) {
      if (ec) return fail("cannot send the request to " + where() + ": " + describe(ec));
      beast::get_lowest_layer(stream_).expires_at(deadline_);
      http::async_read_header(stream_, buffer_, response_.header,
                              [this](beast::error_code ec, std::size_t) { on_header(ec); });
    });
  }

  void on_header(beast::error_code ec) {
    if (ec) return fail("no response from " + where() + ": " + describe(ec));
    auto& res = response_.header.get();
    result_.status = static_cast<int>(res.result_int());
    for (auto& field : res) {
      std::string name(field.name_string());
      for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
      result_.headers[name] = std::string(field.value());
    }
    if (response_.header.is_done()) {  // 304, 204, Content-Length: 0
      if (result_.status == 200 && !options_.body_file.empty()) {
        std::ofstream empty(options_.body_file, std::ios::binary | std::ios::trunc);
        if (!empty) return fail("cannot write " + options_.body_file.string());
      }
      return succeed();
    }
    auto on_body = [this](beast::error_code ec, std::size_t) {
      if (ec == http::error::body_limit)
        return fail("the response from " + where() + " is larger than " + std::to_string(options_.max_body) +
                    " bytes");
      if (ec) return fail("the response from " + where() + " was cut short: " + describe(ec));
      if (response_.to_string) result_.body = std::move(response_.to_string->get().body());
      succeed();
    };
    if (result_.status == 200 && !options_.body_file.empty()) {
      response_.to_file.emplace(std::move(response_.header));
      response_.to_file->body_limit(options_.max_body);
      beast::error_code open_error;
      response_.to_file->get().body().open(options_.body_file.c_str(), beast::file_mode::write, open_error);
      if (open_error)
        return fail("cannot write " + options_.body_file.string() + ": " + open_error.message());
      response_.file_opened = true;
      http::async_read(stream_, buffer_, *response_.to_file, on_body);
    } else {
      response_.to_string.emplace(std::move(response_.header));
      response_.to_string->body_limit(options_.max_body);
      http::async_read(stream_, buffer_, *response_.to_string, on_body);
    }
  }

  void succeed() {
    end();
    beast::error_code ignored;
    // The whole response is in: a TLS close_notify would add a round trip for nothing.
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).close();
  }

  void fail(std::string why) {
    end();
    result_.status = 0;
    result_.headers.clear();
    result_.error = cancelled_ ? "cancelled (" + url_.host + ")" : std::move(why);
    beast::get_lowest_layer(stream_).close();
  }

  void end() {
    ended_ = true;
    watchdog_.cancel();
    cancel_timer_.cancel();
  }

  std::string tls_error(beast::error_code ec) {
    if constexpr (tls) {
      long verify = SSL_get_verify_result(stream_.native_handle());
      if (verify != X509_V_OK) return ec.message() + " (" + X509_verify_cert_error_string(verify) + ")";
    }
    return describe(ec);
  }

  std::string where() const { return host_port(url_.host, url_.port); }
  std::string describe(beast::error_code ec) const {
    if (cancelled_) return "cancelled";
    return ec == beast::error::timeout ? std::string("timed out") : ec.message();
  }

  http_url url_;
  http::request<http::string_body> req_;
  const http_options& options_;
  std::chrono::steady_clock::time_point deadline_;
  boost::asio::io_context io_;
  tcp::resolver resolver_{io_};
  boost::asio::steady_timer watchdog_{io_};
  boost::asio::steady_timer cancel_timer_{io_};
  Stream stream_;
  beast::flat_buffer buffer_;
  /// The response: its header read first, then its body into a string or into options_.body_file.
  struct response_parsers {
    http::response_parser<http::empty_body> header;
    std::optional<http::response_parser<http::string_body>> to_string;
    std::optional<http::response_parser<http::file_body>> to_file;
    bool file_opened = false;
  } response_;
  bool cancelled_ = false;
  bool ended_ = false;
  http_result result_;
};

}  // namespace

std::optional<http_url> parse_http_url(std::string_view url) {
  auto parts = parse_url(url);
  if (!parts || (parts->scheme != "http" && parts->scheme != "https")) return std::nullopt;
  http_url out;
  out.tls = parts->scheme == "https";
  out.port = parts->port.value_or(out.tls ? 443 : 80);
  out.host = std::move(parts->host);
  out.target = std::move(parts->target);
  return out;
}

http_result http_fetch(std::string_view method, std::string_view url, std::string_view body,
                       const std::map<std::string, std::string>& headers, const http_options& options) {
  http_result failed;
  auto parsed = parse_http_url(url);
  if (!parsed) {
    failed.error = "not an http:// or https:// URL: \"" + std::string(url) + "\"";
    return failed;
  }
  auto verb = http::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == http::verb::unknown) {
    failed.error = "unknown HTTP method \"" + std::string(method) + "\"";
    return failed;
  }
  http::request<http::string_body> req{verb, parsed->target, 11};
  bool default_port = parsed->port == (parsed->tls ? 443 : 80);
  auto authority = host_port(parsed->host, parsed->port);
  req.set(http::field::host, default_port ? authority.substr(0, authority.rfind(':')) : authority);
  req.set(http::field::user_agent, "dde");
  bool has_type = false;
  for (auto& [name, value] : headers) {
    req.set(name, value);
    std::string lower = name;
    for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    has_type = has_type || lower == "content-type";
  }
  if (!body.empty() && !has_type) req.set(http::field::content_type, "application/json");
  req.body() = std::string(body);
  req.keep_alive(false);
  req.prepare_payload();
  try {
    if (!parsed->tls) return exchange<beast::tcp_stream>(*parsed, std::move(req), options).run();
    std::shared_ptr<ssl::context> ctx;
    try {
      ctx = make_client_tls_context(tls_options{options.cert_file, options.key_file, options.ca_file, false});
    } catch (const std::exception& e) {
      failed.error = e.what();
      return failed;
    }
    return exchange<beast::ssl_stream<beast::tcp_stream>>(*parsed, std::move(req), options, *ctx).run();
  } catch (const std::exception& e) {
    failed.error = std::string("HTTP request failed: ") + e.what();
    return failed;
  }
}

http_result http_fetch(std::string_view method, std::string_view url, std::string_view body,
                       const std::map<std::string, std::string>& headers, std::chrono::milliseconds timeout) {
  http_options options;
  options.timeout = timeout;
  return http_fetch(method, url, body, headers, options);
}

}  // namespace dde::net
