#include "dde/runtime/hop.hpp"

namespace dde::runtime {

hop hop::begin(const message& m) {
  hop h;
  auto* log = trace::active_log();
  // The host read the header already and dropped a malformed one; parsing 55 bytes again is cheaper
  // than carrying the parsed form through every hop.
  auto incoming = m.traceparent_.empty() ? std::nullopt : trace::parse(m.traceparent_);
  if (incoming) {
    h.ctx_ = trace::child_of(*incoming);
    h.parent_ = incoming->span_id;
    h.has_parent_ = true;
  } else if (log) {
    h.ctx_ = trace::new_trace(true);  // untraced (or malformed) on arrival: this hop is a trace's root
  } else {
    return h;  // tracing off and nothing to carry on: no cost beyond the checks above
  }
  h.active_ = true;
  if (log && h.ctx_.sampled) {
    h.start_us_ = trace::now_us();
    h.message_id_ = m.id();
    h.redelivered_ = m.redelivered();
  }
  return h;
}

void hop::end(std::string_view pool, std::string_view kind, std::string_view error) {
  if (!active_) return;
  active_ = false;
  auto* log = trace::active_log();
  if (!log || !ctx_.sampled || start_us_ == 0) return;
  trace::span s;
  s.ctx = ctx_;
  if (has_parent_) s.parent = std::string_view(parent_.data(), parent_.size());
  s.pool = pool;
  s.kind = kind;
  s.message_id = message_id_;
  s.error = error;
  s.start_us = start_us_;
  s.end_us = trace::now_us();
  s.redelivered = redelivered_;
  log->write(s);
}

std::string hop::outgoing(std::string_view pool, std::string_view message_id) const {
  if (active_) return trace::format(ctx_);
  auto* log = trace::active_log();
  if (!log) return {};
  // Sent while handling nothing (on_start, a timer): a new trace whose root span is this send, so the
  // receiver's span has its parent in the log.
  auto root = trace::new_trace(true);
  trace::span s;
  s.ctx = root;
  s.pool = pool;
  s.kind = "send";
  s.message_id = message_id;
  s.start_us = s.end_us = trace::now_us();
  log->write(s);
  return trace::format(root);
}

}  // namespace dde::runtime
