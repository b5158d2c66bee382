// Scatter-gather and tail-chopping (Akka's "first completed" routers): several workers may hold
// copies of one message, the first reply to it goes out, later ones are dropped and counted. The
// broker message is acked once: when a copy that answered it is done, or when every copy ended.
#include <algorithm>

#include "dde/log.hpp"
#include "host/router.hpp"

namespace dde::host {

bool router::claim_reply(const std::string& message_id) {
  if (!first_reply_wins(spec_.router) || message_id.empty()) return true;
  bool won = race_.claim(message_id);
  if (!won) logger("host.router")->debug("{}: a later reply to {} dropped", spec_.addr().str(), message_id);
  return won;
}

void router::start_race(std::uint64_t delivery_id, delivery& d, const message& msg) {
  if (!first_reply_wins(spec_.router) || msg.id().empty()) return;
  d.message_id = msg.id();
  d.asked = d.pending;
  race_.open(d.message_id);
  race_.count_copies(d.pending.size(), false);
  if (spec_.router != router_kind::tail_chopping) return;
  d.copy = std::make_shared<const message>(msg);
  arm_chop(delivery_id, d);
}

void router::arm_chop(std::uint64_t delivery_id, delivery& d) {
  if (d.asked.size() >= slots_.size()) return;  // every worker has a copy already
  if (!d.chop_timer) d.chop_timer = clock_->make_timer(strand_);
  d.chop_timer->after(spec_.tail_chop_delay,
                      [self = shared_from_this(), delivery_id] { self->chop(delivery_id); });
}

void router::chop(std::uint64_t delivery_id) {
  auto it = deliveries_.find(delivery_id);
  if (it == deliveries_.end() || lifecycle_.stopping()) return;
  auto& d = it->second;
  if (!d.copy || d.succeeded > 0 || race_.answered(d.message_id)) return;
  auto next = ledger_.select_other(d.asked);
  if (next == pool_ledger::npos) return arm_chop(delivery_id, d);  // none with room: try again later
  d.asked.push_back(next);
  d.pending.push_back(next);
  race_.count_copies(1, true);
  hand_to(next, message(*d.copy), delivery_id);
  arm_chop(delivery_id, d);
}

void router::settle_copy(std::uint64_t delivery_id, delivery& d, bool failed) {
  if (d.message_id.empty()) return;
  if (!failed) ++d.succeeded;
  bool answered = race_.answered(d.message_id);
  // A copy failed before anyone answered: the next worker gets one now rather than after the delay.
  if (failed && !answered && d.succeeded == 0 && d.copy) chop(delivery_id);
  // Answered and one copy is done: the message is handled; the others' replies will be dropped.
  if (!failed && answered && !d.acked && !d.pending.empty()) {
    d.acked = true;
    if (spec_.mode == delivery_mode::at_least_once) {
      top_->ack(d.generation, d.tag);
      ++figures_.count().acked;
    }
  }
}

bool router::end_race(delivery& d) {
  if (d.chop_timer) d.chop_timer->cancel();
  race_.close(d.message_id);
  return d.succeeded == 0;
}

}  // namespace dde::host
