#include "api_server.hpp"

#include <boost/asio/steady_timer.hpp>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "dde/net/ws.hpp"

namespace dde::test {
namespace {

net::http_response json_response(int status, const nlohmann::json& body) {
  net::http_response r;
  r.status = status;
  r.body = body.dump();
  return r;
}

net::http_response error_response(int status, const std::string& what) {
  return json_response(status, {{"error", what}});
}

std::int64_t epoch_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class api_server_impl : public api_server {
 public:
  api_server_impl(boost::asio::io_context& io, api_server_options options)
      : io_(io), options_(std::move(options)), limiter_(options_.limits) {
    if (!options_.clock) options_.clock = [] { return std::chrono::steady_clock::now(); };
    if (!options_.log_calls.empty()) {
      log_.open(options_.log_calls, std::ios::app);
      if (!log_) throw std::runtime_error("cannot open the call log " + options_.log_calls);
    }
    net::server_options listen;
    listen.host = options_.host;
    listen.port = options_.port;
    server_ = net::server::create(io_, listen);
    server_->set_http_async(
        [this](const net::http_request& req, std::function<void(net::http_response)> respond) {
          handle(req, std::move(respond));
        });
  }

  std::error_code start() override { return server_->start(); }
  std::uint16_t port() const override { return server_->port(); }
  api_stats stats() const override {
    std::lock_guard lock(mutex_);
    return limiter_.stats(options_.clock());
  }
  void stop() override { server_->stop(); }

 private:
  void handle(const net::http_request& req, std::function<void(net::http_response)> respond) {
    auto path = req.target.substr(0, req.target.find('?'));
    auto wrong_method = [&](const char* allowed) {
      auto r = error_response(405, req.method + " " + path + " is not allowed; use " + allowed);
      r.headers["Allow"] = allowed;
      return r;
    };
    if (path == "/call") {
      if (req.method != "POST") return respond(wrong_method("POST"));
      return call(req, std::move(respond));
    }
    if (path == "/stats") {
      if (req.method != "GET") return respond(wrong_method("GET"));
      return respond(json_response(200, to_json(stats())));
    }
    if (path == "/reset") {
      if (req.method != "POST") return respond(wrong_method("POST"));
      std::lock_guard lock(mutex_);
      limiter_.reset();
      return respond(json_response(200, {{"ok", true}}));
    }
    respond(error_response(404, "no endpoint " + path + " (POST /call, GET /stats, POST /reset)"));
  }

  void call(const net::http_request& req, std::function<void(net::http_response)> respond) {
    nlohmann::json body = nlohmann::json::object();
    if (!req.body.empty()) {
      body = nlohmann::json::parse(req.body, nullptr, false);
      if (body.is_discarded()) return respond(error_response(400, "the body of POST /call is not JSON"));
    }
    nlohmann::json id = body.is_object() && body.contains("id") ? body["id"] : nlohmann::json();
    api_verdict v;
    {
      std::lock_guard lock(mutex_);
      v = limiter_.call(options_.clock());
      if (log_) {
        auto caller = req.headers.find("x-caller");
        log_ << epoch_us() << ' ' << (v.accepted ? 200 : 429) << ' '
             << (id.is_null()     ? std::string("-")
                 : id.is_string() ? id.get<std::string>()
                                  : id.dump())
             << ' ' << (body.is_object() && body.contains("seq") ? body["seq"].dump() : std::string("-"))
             << ' ' << (caller == req.headers.end() || caller->second.empty() ? "-" : caller->second);
        if (!v.accepted) log_ << ' ' << v.retry_after.count() << ' ' << to_string(v.why);
        log_ << '\n';
        log_.flush();
      }
    }
    if (!v.accepted) {
      auto ms = v.retry_after.count();
      auto r = json_response(429, {{"error", "rate limited"}, {"retryAfterMs", ms}});
      r.headers["Retry-After"] = std::to_string((ms + 999) / 1000);  // RFC 9110: whole seconds
      r.headers["Retry-After-Ms"] = std::to_string(ms);
      return respond(std::move(r));
    }
    auto answer = json_response(200, {{"ok", true}, {"id", id}, {"n", v.n}});
    if (options_.work.count() <= 0) return respond(std::move(answer));
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, options_.work);
    timer->async_wait([timer, answer = std::move(answer),
                       respond = std::move(respond)](boost::system::error_code) { respond(answer); });
  }

  boost::asio::io_context& io_;
  api_server_options options_;
  mutable std::mutex mutex_;  ///< sessions run on their own strands; the limiter is shared
  api_limiter limiter_;
  std::ofstream log_;
  std::unique_ptr<net::server> server_;
};

}  // namespace

std::unique_ptr<api_server> api_server::create(boost::asio::io_context& io, api_server_options options) {
  return std::make_unique<api_server_impl>(io, std::move(options));
}

struct api_server_thread::runner {
  boost::asio::io_context io{1};
  std::thread thread;
};

api_server_thread::api_server_thread(api_server_options options) : runner_(std::make_unique<runner>()) {
  server_ = api_server::create(runner_->io, std::move(options));
  if (auto ec = server_->start())
    throw std::runtime_error("the test API server cannot listen: " + ec.message());
  runner_->thread = std::thread([r = runner_.get()] { r->io.run(); });
}

api_server_thread::~api_server_thread() {
  server_->stop();
  runner_->io.stop();
  runner_->thread.join();
}

std::string api_server_thread::call_url() const {
  return "http://127.0.0.1:" + std::to_string(port()) + "/call";
}

}  // namespace dde::test
