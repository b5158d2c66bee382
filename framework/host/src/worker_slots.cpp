#include "worker_slots.hpp"

namespace dde::host {

namespace {
bool local(const std::string& path) { return path == "localhost"; }
}  // namespace

void worker_slots::add(std::shared_ptr<cell> c, const std::string& path) {
  auto index = ledger_.add_worker(c->id(), path);
  if (!local(path)) ledger_.set_alive(index, false);
  slots_.push_back(slot{std::move(c), {}, kill_phase::none, 0, false});
}

void worker_slots::place(std::size_t index, std::shared_ptr<cell> c) {
  if (index == slots_.size()) return add(std::move(c), "localhost");
  auto id = c->id();
  slots_[index] = slot{std::move(c), {}, kill_phase::none, slots_[index].done, false};
  ledger_.set_alive(index, true, id);
  ledger_.set_open(index, true);
}

void worker_slots::renew(std::size_t index, std::shared_ptr<cell> c, const std::string& path) {
  auto& s = slots_[index];
  s.worker = std::move(c);
  s.error.clear();
  ledger_.set_alive(index, local(path), s.worker->id());
}

void worker_slots::install(std::size_t index, std::shared_ptr<cell> fresh) {
  auto& s = slots_[index];
  s.worker = std::move(fresh);
  ledger_.set_alive(index, true, s.worker->id());
  ledger_.set_open(index, true);
  s.kill = kill_phase::none;  // a RESTART revives killed workers
}

void worker_slots::down(std::size_t index, std::string why) {
  ledger_.set_alive(index, false);
  if (index < slots_.size()) slots_[index].error = std::move(why);
}

bool worker_slots::up(std::size_t index, const std::string& id) {
  auto kill = slots_[index].kill;
  if (kill == kill_phase::stopping || kill == kill_phase::killed) return false;
  ledger_.set_alive(index, true, id);
  slots_[index].error.clear();
  return true;
}

void worker_slots::begin_kill(std::size_t index) {
  // The thesis's KILL goes to the end of the worker's queue: close the slot, let the queue drain.
  slots_[index].kill = kill_phase::draining;
  ledger_.set_open(index, false);
}

std::shared_ptr<cell> worker_slots::drained(std::size_t index) {
  if (index >= slots_.size() || slots_[index].kill != kill_phase::draining ||
      (ledger_.alive(index) && ledger_.in_flight(index) > 0))
    return nullptr;
  slots_[index].kill = kill_phase::stopping;
  return slots_[index].worker;
}

bool worker_slots::stopped(std::size_t index, const std::shared_ptr<cell>& c) {
  if (index >= slots_.size()) return false;
  auto& s = slots_[index];
  if (s.worker != c || s.kill != kill_phase::stopping) return false;
  s.kill = kill_phase::killed;
  ledger_.set_alive(index, false);
  return true;
}

void worker_slots::killed_now(std::size_t index) {
  slots_[index].kill = kill_phase::killed;
  ledger_.set_alive(index, false);
}

void worker_slots::reopen(std::size_t index) {
  slots_[index].kill = kill_phase::none;
  ledger_.set_open(index, true);
}

std::size_t worker_slots::active() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!kill_requested(i)) ++n;
  return n;
}

std::size_t worker_slots::idle() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!kill_requested(i) && ledger_.alive(i) && ledger_.in_flight(i) == 0) ++n;
  return n;
}

std::vector<std::size_t> worker_slots::park_idle(std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t i = slots_.size(); i-- > 0 && out.size() < n;) {
    if (kill_requested(i) || !ledger_.alive(i) || ledger_.in_flight(i) > 0) continue;
    slots_[i].parked = true;
    begin_kill(i);
    out.push_back(i);
  }
  return out;
}

std::vector<std::size_t> worker_slots::parked_and_gone() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].parked && slots_[i].kill == kill_phase::killed) out.push_back(i);
  return out;
}

std::string worker_slots::state(std::size_t index) const {
  switch (slots_[index].kill) {
    case kill_phase::draining:
    case kill_phase::stopping: return "killing";
    case kill_phase::killed: return parked(index) ? "parked" : "killed";
    case kill_phase::none: break;
  }
  return ledger_.alive(index) ? "running" : "down";
}

nlohmann::json worker_slots::describe(const std::function<bool(std::size_t)>& canary) const {
  nlohmann::json workers = nlohmann::json::array();
  for (auto& w : ledger_.snapshot()) {
    nlohmann::json entry = {{"id", w.id},
                            {"path", w.path},
                            {"inFlight", w.in_flight},
                            {"peakInFlight", ledger_.peak_in_flight(w.index)},
                            {"done", slots_[w.index].done},
                            {"state", state(w.index)}};
    if (!slots_[w.index].error.empty()) entry["error"] = slots_[w.index].error;
    if (canary(w.index)) entry["canary"] = true;
    workers.push_back(std::move(entry));
  }
  return workers;
}

}  // namespace dde::host
