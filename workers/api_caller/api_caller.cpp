// api_caller: POSTs each message's JSON body to an HTTP API that rate limits its callers (seed
// 001), and leaves the waiting to the pool.
//   args: {"url": "http://127.0.0.1:8080/call", "timeoutMs": 10000, "headers": {"Name": "value"},
//          "defaultBackoffMs": 1000, "log": "", "governance": true, "retryLimit": 5}
// Each call: appends "SEQ CALL MICROS" to args.log as it starts (SEQ is the body's "seq", or -1).
// 2xx: replies {"status","answer": <the API's JSON>,"seq"?} when the message has a replyTo or was
//   asked, appends "SEQ OK MICROS" to args.log, then done().
// 429: backoff(delay) with the delay from Retry-After-Ms, else Retry-After (seconds), else
//   defaultBackoffMs: the whole pool pauses and the message is retried (the pool's retry limit).
// Other statuses and connection failures: throws, with the URL and status (supervision handles it).
// governance: false is the naive baseline (the seed's pre-actor code): on 429 this worker waits the
//   delay itself (after()) and calls again, up to retryLimit times, while the other workers go on
//   calling; "SEQ GAVEUP MICROS" is logged and the message thrown to supervision past the limit.
#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <stdexcept>

#include "../common/sample_util.hpp"
#include "api_response.hpp"
#include "dde/net/http_client.hpp"
#include "dde/worker.hpp"

namespace {

std::map<std::string, std::string> header_args(const nlohmann::json& args) {
  std::map<std::string, std::string> out;
  auto it = args.find("headers");
  if (it == args.end() || it->is_null()) return out;
  if (!it->is_object()) throw std::invalid_argument("api_caller: args.headers must be an object of strings");
  for (auto& [name, value] : it->items()) {
    if (!value.is_string())
      throw std::invalid_argument("api_caller: args.headers." + name + " must be a string, got " +
                                  value.dump());
    out[name] = value.get<std::string>();
  }
  return out;
}

class api_caller : public dde::worker {
 public:
  api_caller()
      : url_(dde::samples::arg_or<std::string>(args(), "url", "")),
        headers_(header_args(args())),
        timeout_(dde::samples::arg_or<std::int64_t>(args(), "timeoutMs", 10000)),
        default_backoff_(dde::samples::arg_or<std::int64_t>(args(), "defaultBackoffMs", 1000)),
        governance_(dde::samples::arg_or<bool>(args(), "governance", true)),
        retry_limit_(dde::samples::arg_or<std::int64_t>(args(), "retryLimit", 5)) {
    if (!dde::net::parse_http_url(url_))
      throw std::invalid_argument("api_caller: args.url \"" + url_ + "\" is not an http:// or https:// URL");
    if (timeout_.count() < 1 || timeout_.count() > 600000)
      throw std::invalid_argument("api_caller: args.timeoutMs must be in [1, 600000], got " +
                                  std::to_string(timeout_.count()));
    if (default_backoff_.count() < 0)
      throw std::invalid_argument("api_caller: args.defaultBackoffMs must be >= 0");
    if (retry_limit_ < 0) throw std::invalid_argument("api_caller: args.retryLimit must be >= 0");
    auto log = dde::samples::arg_or<std::string>(args(), "log", "");
    if (!log.empty()) {
      log_fd_ = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd_ < 0) throw std::invalid_argument("api_caller: cannot open args.log " + log);
    }
  }
  ~api_caller() override {
    if (log_fd_ >= 0) ::close(log_fd_);
  }

  void on_receive(const dde::message& msg) override { attempt(msg, 0); }

 private:
  void attempt(const dde::message& msg, std::int64_t retries) {
    // Blocking, with a deadline: the worker API offers no executor of its own (only after() on this
    // worker's strand), so the call holds one host thread for at most timeoutMs. Size the host's
    // threads for the pool's workers, or keep timeoutMs short.
    auto body = msg.is_bytes() ? std::string(msg.bytes()) : msg.body().dump();
    auto seq = msg.body().is_object() ? msg.body().value("seq", std::int64_t(-1)) : std::int64_t(-1);
    log_line(seq, "CALL");
    auto result = dde::net::http_fetch("POST", url_, body, headers_, timeout_);
    auto outcome = dde::samples::classify(result, url_, default_backoff_);
    switch (outcome.what) {
      case dde::samples::api_outcome::kind::ok: {
        log_line(seq, "OK");
        if (msg.is_ask() || !msg.reply_to().empty()) {
          nlohmann::json answer = {{"status", result.status}, {"answer", std::move(outcome.answer)}};
          if (seq >= 0) answer["seq"] = seq;
          reply(msg, std::move(answer));
        }
        return done();
      }
      case dde::samples::api_outcome::kind::rate_limited:
        if (governance_) return backoff(outcome.delay, outcome.reason);
        if (retries >= retry_limit_) {
          log_line(seq, "GAVEUP");
          throw std::runtime_error("gave up after " + std::to_string(retries) +
                                   " retries: " + outcome.reason);
        }
        // Naive: this worker alone waits and calls again; the rest of the pool keeps calling.
        after(outcome.delay, [this, msg, retries] { attempt(msg, retries + 1); });
        return;
      case dde::samples::api_outcome::kind::failed: throw std::runtime_error(outcome.reason);
    }
  }

  void log_line(std::int64_t seq, const char* what) {
    if (log_fd_ < 0) return;
    std::string line = std::to_string(seq) + " " + what + " " + std::to_string(dde::samples::now_us()) + "\n";
    if (::write(log_fd_, line.data(), line.size()) < 0) {
      // A test aid: a failed write shows up as a missing line.
    }
  }

  std::string url_;
  std::map<std::string, std::string> headers_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds default_backoff_;
  bool governance_;
  std::int64_t retry_limit_;
  int log_fd_ = -1;
};

}  // namespace

DDE_WORKER(api_caller)
