// What an operator asks of a running pool (thesis 3.4.2 and our additions): KILL one worker or
// all, RESTART every worker, and a new rate. KILL drains a slot first: it is closed in the ledger,
// finishes what it holds, then its instance stops (before_kill runs) and stays down until a RESTART.
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "host/router.hpp"

namespace dde::host {

void router::set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight,
                      op_done done) {
  boost::asio::post(strand_,
                    [self = shared_from_this(), messages, per, max_in_flight, done = std::move(done)] {
                      if (self->stopping_) return done(refused(refusal::conflict, self->stopped_text()));
                      self->spec_.rate_messages = messages;
                      self->spec_.rate_per = per;
                      self->spec_.max_in_flight = max_in_flight;
                      logger("host.router")
                          ->info("{}: rate {} per {} ms, maxInFlight {} (0 = none)", self->spec_.addr().str(),
                                 messages, per.count(), max_in_flight);
                      self->gate_->set(messages, per, max_in_flight);
                      done(true);
                    });
}

void router::restart_workers(op_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    auto pool = self->spec_.addr().str();
    if (self->halted_) {
      self->revive();
      return done(true);
    }
    if (self->stopping_) return done(refused(refusal::conflict, self->stopped_text()));
    if (self->swap_busy())
      return done(refused(refusal::conflict, self->canary_.judging()
                                                 ? self->canary_.busy_text()
                                                 : "pool " + pool + " is already restarting"));
    if (!self->plugin_)
      return done(refused(refusal::conflict, "pool " + pool + " has no local workers to restart"));
    logger("host.router")->info("{}: RESTART of every worker", self->spec_.addr().str());
    auto swapped = self->begin_swap(self->plugin_, swap_kind::restart, true);
    done(swapped ? op_result(true) : refused(refusal::conflict, swapped.error()));
  });
}

void router::kill_workers(std::string worker_id, kill_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), worker_id = std::move(worker_id),
                              done = std::move(done)] {
    auto pool = self->spec_.addr().str();
    auto no = [&](refusal why, std::string text) { done(kill_result::failure(std::move(text), why)); };
    if (self->stopping_) return no(refusal::conflict, self->stopped_text());
    if (self->swap_busy())
      return no(refusal::conflict,
                (self->canary_.judging() ? self->canary_.busy_text() : "pool " + pool + " is restarting") +
                    "; KILL it once it runs again");
    std::vector<std::size_t> targets;
    if (worker_id.empty()) {
      for (std::size_t i = 0; i < self->slots_.size(); ++i)
        if (!self->kill_requested(i)) targets.push_back(i);
      if (targets.empty())
        return no(refusal::conflict,
                  "every worker of pool " + pool + " is already killed; RESTART brings them back");
    } else {
      std::size_t index = pool_ledger::npos;
      for (auto& w : self->ledger_.snapshot())
        if (w.id == worker_id) index = w.index;
      if (index == pool_ledger::npos)
        return no(refusal::not_found, "no worker \"" + worker_id + "\" in pool " + pool +
                                          " (GET /registry/system/{bootstrapperId} lists them)");
      if (self->kill_requested(index))
        return no(refusal::conflict, "worker " + worker_id + " of pool " + pool + " is already killed");
      targets.push_back(index);
    }
    std::vector<std::string> ids;
    ids.reserve(targets.size());
    auto workers = self->ledger_.snapshot();
    for (auto i : targets) ids.push_back(workers[i].id);
    logger("host.router")
        ->info("{}: KILL of {} worker(s); they finish what they hold first", pool, ids.size());
    for (auto i : targets) self->begin_kill(i);
    done(std::move(ids));
  });
}

std::string router::stopped_text() const {
  auto pool = spec_.addr().str();
  if (!halted_) return "pool " + pool + " is shutting down";
  return "pool " + pool + " is " + supervisor_.stop_reason() +
         "; RESTART starts it again (ddectl restart ID " + spec_.system + " " + spec_.isolate +
         ", or POST /registry/system/restart)";
}

void router::begin_kill(std::size_t index) {
  // The thesis's KILL goes to the end of the worker's queue: close the slot, let the queue drain.
  slots_[index].kill = kill_phase::draining;
  ledger_.set_open(index, false);
  settle_kill(index);
}

void router::settle_kill(std::size_t index) {
  if (slots_[index].kill != kill_phase::draining || (ledger_.alive(index) && ledger_.in_flight(index) > 0))
    return;
  slots_[index].kill = kill_phase::stopping;
  auto c = slots_[index].worker;
  c->kill([self = shared_from_this(), index, c] {
    boost::asio::post(self->strand_, [self, index, c] {
      // A RESTART may have put a fresh instance in the slot meanwhile (or the pool shut down).
      if (index >= self->slots_.size()) return;
      auto& s = self->slots_[index];
      if (s.worker != c || s.kill != kill_phase::stopping) return;
      s.kill = kill_phase::killed;
      self->ledger_.set_alive(index, false);
      self->watch_.forget(index);
      logger("host.router")->info("{}: worker {} killed", self->spec_.addr().str(), c->id());
    });
  });
}

std::string router::worker_state(std::size_t index) const {
  switch (slots_[index].kill) {
    case kill_phase::draining:
    case kill_phase::stopping: return "killing";
    case kill_phase::killed: return parked(index) ? "parked" : "killed";
    case kill_phase::none: break;
  }
  return ledger_.alive(index) ? "running" : "down";
}

}  // namespace dde::host
