#pragma once
/// \file
/// W3C trace context (https://www.w3.org/TR/trace-context/) for DDE messages, and the span log.
/// Every traced message carries the AMQP header `traceparent`, `00-<trace id>-<parent span id>-<flags>`
/// (32, 16 and 2 lowercase hex digits). A worker handling a traced message is one span of that trace;
/// what it sends, asks, replies or forwards meanwhile carries the trace on with that span as parent.
/// A retry (delay queue, requeue, dead letter) keeps the message's traceparent as it was.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dde::trace {

/// A trace id (16 bytes) and a span id (8 bytes), kept as the lowercase hex the header carries.
struct context {
  std::array<char, 32> trace_id{};
  std::array<char, 16> span_id{};
  bool sampled = true;

  std::string_view trace() const { return {trace_id.data(), trace_id.size()}; }
  std::string_view span() const { return {span_id.data(), span_id.size()}; }
};

/// Length of a version-00 traceparent.
constexpr std::size_t traceparent_size = 55;

/// Reads a traceparent header; nullopt when it is malformed (wrong length or version "ff", not
/// lowercase hex, an all-zero id). A later version is read by its version-00 prefix, as W3C asks.
std::optional<context> parse(std::string_view traceparent);

/// `00-<trace>-<span>-<01|00>`.
std::string format(const context& c);

/// A new random span id (never all zeros).
std::array<char, 16> new_span_id();

/// A new trace: random trace and span ids.
context new_trace(bool sampled = true);

/// A span of `parent`'s trace: the same trace id and flags, a new span id.
context child_of(const context& parent);

/// Microseconds since the Unix epoch, for span times.
std::int64_t now_us();

/// One finished span: a message handled by a worker (kind "receive" for a pool message, "reply" for
/// an ask's answer) or a message sent while handling none (kind "send", a trace's root).
struct span {
  context ctx;                  ///< trace id, this span's id, sampled
  std::string_view parent;      ///< parent span id; empty for a root
  std::string_view pool;        ///< "system/pool"
  std::string_view kind;        ///< "receive", "reply" or "send"
  std::string_view message_id;  ///< the handled (or sent) message
  std::string_view error;       ///< empty: status "ok"; else status "error" with this text
  std::int64_t start_us = 0;
  std::int64_t end_us = 0;
  bool redelivered = false;  ///< the broker delivered the handled message before
};

/// Where finished spans go: one JSON object per line, appended to a file (several processes may
/// share it: each line is one write(2) with O_APPEND). See the manual's "Traces".
class span_log {
 public:
  /// Opens (creates, appends to) `path`; throws std::runtime_error when it cannot.
  span_log(const std::string& path, std::string node);
  ~span_log();
  span_log(const span_log&) = delete;
  span_log& operator=(const span_log&) = delete;

  /// Writes `s` (when it is sampled). Thread-safe.
  void write(const span& s);
  /// The JSON line `write` appends for `s` (with its newline).
  std::string line(const span& s) const;

 private:
  int fd_ = -1;
  std::string node_;
};

/// The process's span log, or null when tracing is off (the default). Workers start new traces for
/// messages sent outside a traced message only when it is set.
span_log* active_log();
/// Installs (or, with null, removes) the process's span log; call before workers run.
void set_active_log(std::unique_ptr<span_log> log);
/// A daemon's `--trace-log PATH` / `--trace-node NAME`: installs a span log at `path` (empty: $DDE_TRACE_LOG;
/// both empty: tracing stays off) naming `node` (empty: $DDE_TRACE_NODE, else the host name). Throws
/// std::runtime_error when the file cannot be opened.
void open_span_log(std::string path, std::string node);

}  // namespace dde::trace
