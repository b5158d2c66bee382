#pragma once
// dde-test-api-server as a library: an HTTP server that imitates a third-party API with a rate
// limit and escalating penalties (api_limiter), for the api_caller worker's tests and benchmark.
//   POST /call   any JSON body (optional "id", echoed) -> 200 {"ok":true,"id":...,"n":N}, or 429 with
//                Retry-After (whole seconds, rounded up), Retry-After-Ms and {"error","retryAfterMs"}
//   GET /stats   the counters (api_stats);  POST /reset  forgets calls, cessations and counters

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "api_limiter.hpp"

namespace dde::test {

struct api_server_options {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  ///< 0 picks a free port
  api_limits limits;
  std::chrono::milliseconds work{0};  ///< latency of each accepted call (a timer, not a busy wait)
  /// When set, one line per call: "EPOCH_US STATUS ID SEQ CALLER", and for a 429 " RETRY_MS WHY" (WHY:
  /// violation, on-the-wire, during-cessation). ID and SEQ are the body's "id" and "seq", CALLER the
  /// X-Caller header; "-" where there is none.
  std::string log_calls;
  /// The limiter's clock; tests inject a fake one to skip real penalties. Default: steady_clock.
  std::function<std::chrono::steady_clock::time_point()> clock;
};

class api_server {
 public:
  /// Throws std::invalid_argument for bad limits, std::runtime_error when the call log cannot be opened.
  static std::unique_ptr<api_server> create(boost::asio::io_context& io, api_server_options options);
  virtual ~api_server() = default;
  virtual std::error_code start() = 0;
  virtual std::uint16_t port() const = 0;
  virtual api_stats stats() const = 0;
  virtual void stop() = 0;
};

/// An api_server on its own thread, for tests and benchmarks that run it in-process.
class api_server_thread {
 public:
  /// Starts listening before it returns; throws std::runtime_error when it cannot.
  explicit api_server_thread(api_server_options options);
  ~api_server_thread();
  api_server_thread(const api_server_thread&) = delete;
  api_server_thread& operator=(const api_server_thread&) = delete;

  std::uint16_t port() const { return server_->port(); }
  /// http://127.0.0.1:PORT/call
  std::string call_url() const;
  api_stats stats() const { return server_->stats(); }

 private:
  struct runner;
  std::unique_ptr<runner> runner_;
  std::unique_ptr<api_server> server_;
};

}  // namespace dde::test
