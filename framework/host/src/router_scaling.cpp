// The pool's side of autoscaling (host/autoscaler decides): it grows by reviving parked slots, then
// by adding local workers; it shrinks by parking idle ones (the KILL path: the slot closes, finishes
// what it holds, before_kill runs).
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/runtime/load_failures.hpp"
#include "router.hpp"

namespace dde::host {

std::size_t router::active_workers() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < flow_.slots.size(); ++i)
    if (!kill_requested(i)) ++n;
  return n;
}

std::size_t router::idle_workers() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < flow_.slots.size(); ++i)
    if (!kill_requested(i) && flow_.ledger.alive(i) && flow_.ledger.in_flight(i) == 0) ++n;
  return n;
}

void router::ask_depth(std::function<void(std::uint64_t, std::string)> answer) {
  top_->queue_depth(pool_.topic, [weak = weak_from_this(), answer = std::move(answer)](
                                     std::uint64_t messages, std::uint64_t, std::string error) {
    auto r = weak.lock();
    if (!r) return;
    boost::asio::post(r->strand_,
                      [r, answer, messages, error = std::move(error)] { answer(messages, error); });
  });
}

bool router::add_local_worker(std::size_t index) {
  if (!hot_.plugin()) return false;
  bool fresh_slot = index == flow_.slots.size();
  if (fresh_slot) pool_.spec.workers_paths.emplace_back("localhost");
  auto c = make_cell(index, hot_.plugin());
  auto made = c->create();
  if (!made) {
    if (fresh_slot) pool_.spec.workers_paths.pop_back();
    logger("host.router")->error("{}: cannot add a worker: {}", pool_.spec.addr().str(), made.error());
    scaling_.cannot_add("cannot add a worker: " + made.error());
    count_plugin_load_failure(pool_.topic, made.code<plugin_failure>());
    return false;
  }
  if (fresh_slot) {
    flow_.ledger.add_worker(c->id(), "localhost");
    flow_.slots.push_back(slot{c, {}, kill_phase::none, 0, false});
  } else {
    flow_.slots[index] = slot{c, {}, kill_phase::none, flow_.slots[index].done, false};
    flow_.ledger.set_alive(index, true, c->id());
    flow_.ledger.set_open(index, true);
  }
  watch_.renew(index);
  c->start();
  return true;
}

void router::grow(std::size_t want) {
  // Parked slots whose instance is gone come back first; then new slots.
  for (std::size_t i = 0; i < flow_.slots.size() && want > 0; ++i)
    if (parked(i) && flow_.slots[i].kill == kill_phase::killed && add_local_worker(i)) --want;
  while (want > 0 && add_local_worker(flow_.slots.size())) --want;
}

void router::shrink(std::size_t drop) {
  // The idle ones go, newest slots first.
  for (std::size_t i = flow_.slots.size(); i-- > 0 && drop > 0;) {
    if (kill_requested(i) || !flow_.ledger.alive(i) || flow_.ledger.in_flight(i) > 0) continue;
    flow_.slots[i].parked = true;
    begin_kill(i);
    --drop;
  }
}

void router::scaled() {
  flush_waiting();
  request_credit();
  // What the node runs changed by the pool's own decision: the registry describes the node again.
  if (events_)
    events_({{"event", "poolScaled"}, {"isolateName", pool_.spec.isolate}, {"workers", active_workers()}});
}

}  // namespace dde::host
