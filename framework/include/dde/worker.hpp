#pragma once
/// \file
/// The worker API for plugin authors: derive from `dde::worker`, implement `on_receive`,
/// call `done()` when ready for the next message, and export the class with `DDE_WORKER`.

#include <chrono>
#include <cstdio>
#include <exception>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "dde/args.hpp"
#include "dde/message.hpp"

/// Version of the plugin ABI; the host refuses a plugin built against another. 2: worker_context
/// gained backoff and forward; 3: send_after; 4: message carries its traceparent.
#ifndef DDE_ABI_VERSION
#define DDE_ABI_VERSION 4
#endif

namespace dde {

/// Thrown from `on_receive` (or reported with `worker::backoff`) when an external API said "too many
/// requests": the whole pool (every worker, every replica) stops starting messages for `delay`, and
/// the message is tried again after it, up to the pool's retry limit, then dead-lettered with `what()`.
/// Any other exception goes to the pool's supervision strategy.
class rate_limited : public std::runtime_error {
 public:
  rate_limited(std::chrono::milliseconds delay, const std::string& reason)
      : std::runtime_error(reason), delay_(delay) {}
  std::chrono::milliseconds delay() const { return delay_; }

 private:
  std::chrono::milliseconds delay_;
};

/// What the host gives each worker instance. Implemented by the isolate-system host.
class worker_context {
 public:
  virtual ~worker_context() = default;
  virtual const nlohmann::json& args() const = 0;
  virtual const std::string& self() const = 0;
  virtual const std::string& worker_id() const = 0;
  virtual void send(nlohmann::json body, std::string bytes, bool is_bytes, std::string_view to,
                    std::string_view reply_to) = 0;
  virtual void ask(nlohmann::json body, std::string_view to) = 0;
  virtual void reply(const message& to_message, nlohmann::json body) = 0;
  virtual void done() = 0;
  /// Ends the current message as rate-limited (see `rate_limited`), instead of `done()`.
  virtual void backoff(std::chrono::milliseconds delay, std::string_view reason) = 0;
  virtual void when_writable(std::function<void()> fn) = 0;
  virtual void after(std::chrono::milliseconds delay, std::function<void()> fn) = 0;
  virtual void log(int level, std::string_view text) = 0;
  /// Sends `m` on to `to` as it is: same id, sender, replyTo and asker (see `worker::forward`).
  virtual void forward(const message& m, std::string_view to) = 0;
  /// Sends a JSON message to `to` that arrives after `delay` (see `worker::send_after`).
  virtual void send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) = 0;
};

namespace detail {
/// Set by the plugin entry point while the worker's constructor runs.
inline thread_local worker_context* constructing_context = nullptr;
}  // namespace detail

template <class T>
class throttler;

/// Base class of every worker. One instance handles one message at a time, on its own strand.
class worker {
 public:
  worker() : ctx_(detail::constructing_context) {}
  worker(const worker&) = delete;
  worker& operator=(const worker&) = delete;
  virtual ~worker() = default;

  /// Called once the worker is deployed, before its first message.
  virtual void on_start() {}
  /// Called for each message; call `done()` (now or later) to receive the next one.
  virtual void on_receive(const message& msg) = 0;
  /// Called before the instance is destroyed (shutdown, restart, hot swap).
  virtual void before_kill() {}

 protected:
  /// Sends a JSON message to the pool at `to` (`system/isolate`).
  void send(nlohmann::json body, std::string_view to, std::string_view reply_to = {}) {
    ctx_->send(std::move(body), {}, false, to, reply_to);
  }
  /// Sends a JSON message to the pool at `to` that reaches it once `delay` (1 ms to 24 h) has
  /// passed: it waits in the broker, in the delay queue of `to` for that delay (a durable quorum queue
  /// that gives it back at least once, so it survives a broker restart), not in this process. Each
  /// distinct delay is a queue of its own: use a few fixed delays, not computed ones.
  void send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) {
    ctx_->send_after(delay, std::move(body), to);
  }
  /// Sends raw bytes to the pool at `to`.
  void send_bytes(std::string bytes, std::string_view to, std::string_view reply_to = {}) {
    ctx_->send(nullptr, std::move(bytes), true, to, reply_to);
  }
  /// Sends a message whose reply comes back to this very instance (see `message::is_reply`).
  void ask(nlohmann::json body, std::string_view to) { ctx_->ask(std::move(body), to); }
  /// Sends a received message on to the pool at `to` unchanged, as Akka's `forward`: the target
  /// sees the original sender, and its `reply` goes where a reply to `m` would have gone (`m`'s
  /// replyTo, asking instance or sender), not to this worker. The message keeps its id.
  void forward(const message& m, std::string_view to) { ctx_->forward(m, to); }
  /// Answers the message being handled: to its `reply_to`, else to the asking instance or sender.
  void reply(nlohmann::json body) { ctx_->reply(current_, std::move(body)); }
  /// Answers a given earlier message.
  void reply(const message& to_message, nlohmann::json body) { ctx_->reply(to_message, std::move(body)); }
  /// Finishes the current message: acknowledges it and pulls the next one.
  void done() { ctx_->done(); }
  /// Instead of `done()`, from `on_receive` or later: the external API this worker calls is rate
  /// limiting. The whole pool pauses for `delay` and this message is tried again after it (up to the
  /// pool's retry limit, then it is dead-lettered with `reason`). Same as throwing `rate_limited`.
  void backoff(std::chrono::milliseconds delay, std::string_view reason) { ctx_->backoff(delay, reason); }
  /// Runs `fn` on this worker's strand once the host's outbound window has room again.
  void when_writable(std::function<void()> fn) { ctx_->when_writable(std::move(fn)); }
  /// Runs `fn` on this worker's strand after `delay`.
  void after(std::chrono::milliseconds delay, std::function<void()> fn) { ctx_->after(delay, std::move(fn)); }
  /// The `args` of the deployment.
  const nlohmann::json& args() const { return ctx_->args(); }
  /// `args()[name]` as T, or `fallback` when absent; throws `argument_error` (naming the argument
  /// and this pool) when it has another type. Usable in the constructor: `arg<int>("count", 10)`.
  template <class T>
  T arg(std::string_view name, T fallback) const {
    return dde::arg_or<T>(args(), name, std::move(fallback), self());
  }
  std::string arg(std::string_view name, const char* fallback) const {
    return arg<std::string>(name, fallback);
  }
  /// `args()[name]` as T; throws `argument_error` naming the argument and this pool when it is
  /// missing or has another type. Thrown from the constructor, it fails the deploy with that message.
  template <class T>
  T required_arg(std::string_view name) const {
    return dde::required_arg<T>(args(), name, self());
  }
  /// This pool's address, `system/isolate`.
  const std::string& self() const { return ctx_->self(); }
  /// This instance's id, unique within its isolate system.
  const std::string& worker_id() const { return ctx_->worker_id(); }
  /// Logs through the host's logger (levels as spdlog: 0 trace ... 5 critical).
  void log(int level, std::string_view text) { ctx_->log(level, text); }
  void log_info(std::string_view text) { ctx_->log(2, text); }

 private:
  friend class worker_access;
  template <class T>
  friend class throttler;
  worker_context* ctx_;
  message current_;
};

/// Host-side access to a worker's private parts.
class worker_access {
 public:
  static void set_current(worker& w, message m) { w.current_ = std::move(m); }
  static const message& current(const worker& w) { return w.current_; }
  static message take_current(worker& w) { return std::exchange(w.current_, message{}); }
};

}  // namespace dde

/// Exports `Class` (a `dde::worker` with a default constructor) as this plugin's worker.
#define DDE_WORKER(Class)                                                                                    \
  extern "C" __attribute__((visibility("default"))) int dde_plugin_abi_version() { return DDE_ABI_VERSION; } \
  extern "C" __attribute__((visibility("default"))) int dde_create_worker(                                   \
      ::dde::worker_context* ctx, ::dde::worker** out, char* error, unsigned long error_size) {              \
    ::dde::detail::constructing_context = ctx;                                                               \
    try {                                                                                                    \
      *out = new Class();                                                                                    \
      ::dde::detail::constructing_context = nullptr;                                                         \
      return 0;                                                                                              \
    } catch (const std::exception& e) {                                                                      \
      std::snprintf(error, error_size, "%s", e.what());                                                      \
    } catch (...) {                                                                                          \
      std::snprintf(error, error_size, "unknown exception");                                                 \
    }                                                                                                        \
    ::dde::detail::constructing_context = nullptr;                                                           \
    return 1;                                                                                                \
  }                                                                                                          \
  extern "C" __attribute__((visibility("default"))) void dde_destroy_worker(::dde::worker* w) { delete w; }
