#include "first_reply.hpp"

#include "dde/log.hpp"
#include "routing.hpp"

namespace dde::host {

first_reply::first_reply(host::clock& clock, const strand_type& strand, const pool_spec& spec,
                         race_pool& pool)
    : clock_(clock), strand_(strand), spec_(spec), pool_(pool) {}

bool first_reply::claim(const std::string& message_id) {
  if (!first_reply_wins(spec_.router) || message_id.empty()) return true;
  bool won = race_.claim(message_id);
  if (!won) logger("host.router")->debug("{}: a later reply to {} dropped", spec_.addr().str(), message_id);
  return won;
}

void first_reply::open(std::uint64_t delivery_id, const message& msg,
                       const std::vector<std::size_t>& workers) {
  if (!first_reply_wins(spec_.router) || msg.id().empty()) return;
  auto& r = races_[delivery_id];
  r.message_id = msg.id();
  r.asked = workers;
  race_.open(r.message_id);
  race_.count_copies(workers.size(), false);
  if (spec_.router != router_kind::tail_chopping) return;
  r.copy = std::make_shared<const message>(msg);
  arm_chop(delivery_id, r);
}

void first_reply::arm_chop(std::uint64_t delivery_id, race& r) {
  if (r.asked.size() >= pool_.slot_count()) return;  // every worker has a copy already
  if (!r.chop_timer) r.chop_timer = clock_.make_timer(strand_);
  r.chop_timer->after(spec_.tail_chop_delay, [this, delivery_id] { chop(delivery_id); });
}

void first_reply::chop(std::uint64_t delivery_id) {
  auto it = races_.find(delivery_id);
  if (it == races_.end() || pool_.stopping()) return;
  auto& r = it->second;
  if (!r.copy || r.succeeded > 0 || race_.answered(r.message_id)) return;
  auto next = pool_.other_worker(r.asked);
  if (next == pool_ledger::npos) return arm_chop(delivery_id, r);  // none with room: try again later
  r.asked.push_back(next);
  race_.count_copies(1, true);
  pool_.hand_copy(delivery_id, next, message(*r.copy));
  arm_chop(delivery_id, r);
}

void first_reply::copy_ended(std::uint64_t delivery_id, bool failed) {
  auto it = races_.find(delivery_id);
  if (it == races_.end()) return;
  auto& r = it->second;
  if (!failed) ++r.succeeded;
  bool answered = race_.answered(r.message_id);
  // A copy failed before anyone answered: the next worker gets one now rather than after the delay.
  if (failed && !answered && r.succeeded == 0 && r.copy) chop(delivery_id);
  // Answered and one copy is done: the message is handled; the others' replies will be dropped.
  if (!failed && answered && !r.acked) {
    r.acked = true;
    pool_.ack_answered(delivery_id);
  }
}

first_reply::outcome first_reply::close(std::uint64_t delivery_id) {
  auto it = races_.find(delivery_id);
  if (it == races_.end()) return {};
  auto& r = it->second;
  outcome o{r.succeeded == 0, r.acked};
  race_.close(r.message_id);
  races_.erase(it);  // its timer with it: a chop that was due no longer runs
  return o;
}

}  // namespace dde::host
