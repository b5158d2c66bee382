// Synchronous HTTP client: resolve -> connect -> write -> read on a private io_context, so that
// one deadline covers every step (Beast's timeouts only apply to asynchronous operations).
#include "dde/net/http_client.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>

namespace dde::net {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr std::size_t max_response_body = 64 * 1024 * 1024;

/// Runs one exchange; every completion handler either starts the next step or records the end.
class exchange {
 public:
  exchange(const http_url& url, http::request<http::string_body> req, std::chrono::milliseconds timeout)
      : url_(url), req_(std::move(req)), deadline_(std::chrono::steady_clock::now() + timeout) {}

  http_result run() {
    // The resolver has no timeout of its own: a watchdog cancels it at the deadline.
    boost::asio::steady_timer watchdog(io_, deadline_);
    watchdog.async_wait([this](beast::error_code ec) {
      if (!ec) resolver_.cancel();
    });
    resolver_.async_resolve(url_.host, std::to_string(url_.port),
                            [this, &watchdog](beast::error_code ec, tcp::resolver::results_type results) {
                              watchdog.cancel();
                              on_resolve(ec, std::move(results));
                            });
    io_.run();
    return std::move(result_);
  }

 private:
  void on_resolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec)
      return fail(ec == boost::asio::error::operation_aborted
                      ? "timed out resolving " + url_.host
                      : "cannot resolve " + url_.host + ": " + ec.message());
    stream_.expires_at(deadline_);
    stream_.async_connect(results, [this](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return fail("cannot connect to " + where() + ": " + describe(ec));
      stream_.expires_at(deadline_);
      http::async_write(stream_, req_, [this](beast::error_code ec, std::size_t) {
        if (ec) return fail("cannot send the request to " + where() + ": " + describe(ec));
        parser_.body_limit(max_response_body);
        stream_.expires_at(deadline_);
        http::async_read(stream_, buffer_, parser_,
                         [this](beast::error_code ec, std::size_t) { on_read(ec); });
      });
    });
  }

  void on_read(beast::error_code ec) {
    if (ec) return fail("no response from " + where() + ": " + describe(ec));
    auto& res = parser_.get();
    result_.status = static_cast<int>(res.result_int());
    result_.body = std::move(res.body());
    for (auto& field : res) {
      std::string name(field.name_string());
      for (auto& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
      result_.headers[name] = std::string(field.value());
    }
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }

  void fail(std::string why) { result_.error = std::move(why); }
  std::string where() const { return url_.host + ":" + std::to_string(url_.port); }
  static std::string describe(beast::error_code ec) {
    return ec == beast::error::timeout ? std::string("timed out") : ec.message();
  }

  http_url url_;
  http::request<http::string_body> req_;
  std::chrono::steady_clock::time_point deadline_;
  boost::asio::io_context io_;
  tcp::resolver resolver_{io_};
  beast::tcp_stream stream_{io_};
  beast::flat_buffer buffer_;
  http::response_parser<http::string_body> parser_;
  http_result result_;
};

}  // namespace

std::optional<http_url> parse_http_url(std::string_view url) {
  constexpr std::string_view scheme = "http://";
  if (url.substr(0, scheme.size()) != scheme) return std::nullopt;
  url.remove_prefix(scheme.size());
  http_url out;
  auto slash = url.find('/');
  auto hostport = url.substr(0, slash);
  if (slash != std::string_view::npos) out.target = std::string(url.substr(slash));
  auto colon = hostport.rfind(':');
  if (colon != std::string_view::npos && hostport.find(']') == std::string_view::npos) {
    auto port = hostport.substr(colon + 1);
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || ptr != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
    out.port = std::uint16_t(value);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) return std::nullopt;
  out.host = std::string(hostport);
  return out;
}

http_result http_fetch(std::string_view method, std::string_view url, std::string_view body,
                       const std::map<std::string, std::string>& headers, std::chrono::milliseconds timeout) {
  http_result failed;
  auto parsed = parse_http_url(url);
  if (!parsed) {
    failed.error = "not an http:// URL: \"" + std::string(url) + "\"";
    return failed;
  }
  auto verb = http::string_to_verb(beast::string_view(method.data(), method.size()));
  if (verb == http::verb::unknown) {
    failed.error = "unknown HTTP method \"" + std::string(method) + "\"";
    return failed;
  }
  http::request<http::string_body> req{verb, parsed->target, 11};
  req.set(http::field::host, parsed->host + ":" + std::to_string(parsed->port));
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
    return exchange(*parsed, std::move(req), timeout).run();
  } catch (const std::exception& e) {
    failed.error = std::string("HTTP request failed: ") + e.what();
    return failed;
  }
}

}  // namespace dde::net
