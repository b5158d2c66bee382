#pragma once
// The span of one message through a worker (the manual's "Traces"): begun when the worker takes it,
// continuing the sender's trace or, when this process traces, starting one; ended when the worker is
// done with it, when its span is written to the trace log (this process traces and the trace is
// sampled). What the worker sends meanwhile carries the hop's trace.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "dde/core/trace.hpp"
#include "dde/message.hpp"

namespace dde::runtime {

class hop {
 public:
  /// The hop of `m`: its trace continued, a new one when this process traces, or none (inactive).
  static hop begin(const message& m);
  /// A traced message is being handled.
  bool active() const { return active_; }
  /// Writes the hop's span for worker `pool` (kind "receive" or "reply"; `error` when it failed), once.
  void end(std::string_view pool, std::string_view kind, std::string_view error);
  /// The traceparent for message `message_id` that `pool` sends now: this hop's trace; while no hop
  /// is active, a new trace whose root span is this send when this process traces, else none.
  std::string outgoing(std::string_view pool, std::string_view message_id) const;

 private:
  bool active_ = false;
  trace::context ctx_;             ///< its trace, with this hop's span id
  std::array<char, 16> parent_{};  ///< the sender's span id
  bool has_parent_ = false;
  std::int64_t start_us_ = 0;  ///< 0: no span is written
  std::string message_id_;
  bool redelivered_ = false;
};

}  // namespace dde::runtime
