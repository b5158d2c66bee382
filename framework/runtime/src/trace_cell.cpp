// The trace side of a worker cell: the hop (span) of the message being handled, and the traceparent
// of what the worker sends meanwhile (the manual's "Traces").
#include "dde/runtime/worker_cell.hpp"

namespace dde::runtime {

worker_cell::hop worker_cell::begin_hop(const message& m) const {
  hop h;
  auto* log = trace::active_log();
  // The host read the header already and dropped a malformed one; parsing 55 bytes again is cheaper
  // than carrying the parsed form through every hop.
  auto incoming = m.traceparent_.empty() ? std::nullopt : trace::parse(m.traceparent_);
  if (incoming) {
    h.ctx = trace::child_of(*incoming);
    h.parent = incoming->span_id;
    h.has_parent = true;
  } else if (log) {
    h.ctx = trace::new_trace(true);  // untraced (or malformed) on arrival: this hop is a trace's root
  } else {
    return h;  // tracing off and nothing to carry on: no cost beyond the checks above
  }
  h.active = true;
  if (log && h.ctx.sampled) {
    h.start_us = trace::now_us();
    h.message_id = m.id();
    h.redelivered = m.redelivered();
  }
  return h;
}

void worker_cell::end_hop(hop& h, std::string_view kind, std::string_view error) {
  if (!h.active) return;
  h.active = false;
  auto* log = trace::active_log();
  if (!log || !h.ctx.sampled || h.start_us == 0) return;
  trace::span s;
  s.ctx = h.ctx;
  if (h.has_parent) s.parent = std::string_view(h.parent.data(), h.parent.size());
  s.pool = self_;
  s.kind = kind;
  s.message_id = h.message_id;
  s.error = error;
  s.start_us = h.start_us;
  s.end_us = trace::now_us();
  s.redelivered = h.redelivered;
  log->write(s);
}

std::string worker_cell::outgoing_traceparent(std::string_view message_id) {
  if (hop_.active) return trace::format(hop_.ctx);
  auto* log = trace::active_log();
  if (!log) return {};
  // Sent while handling nothing (on_start, a timer): a new trace whose root span is this send, so the
  // receiver's span has its parent in the log.
  auto root = trace::new_trace(true);
  trace::span s;
  s.ctx = root;
  s.pool = self_;
  s.kind = "send";
  s.message_id = message_id;
  s.start_us = s.end_us = trace::now_us();
  log->write(s);
  return trace::format(root);
}

}  // namespace dde::runtime
