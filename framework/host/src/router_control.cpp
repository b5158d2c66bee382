// What an operator asks of a running pool (thesis 3.4.2 and our additions): KILL one worker or
// all, RESTART every worker (host/hot_swap swaps them through the slots below), and a new rate. KILL drains a
// slot first: it is closed in the ledger, finishes what it holds, then its instance stops (before_kill runs)
// and stays down until a RESTART.
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "router.hpp"

namespace dde::host {

void router::set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight,
                      op_done done) {
  boost::asio::post(strand_,
                    [self = shared_from_this(), messages, per, max_in_flight, done = std::move(done)] {
                      if (self->lifecycle_.stopping())
                        return done(refused(refusal::conflict, self->stopped_text()));
                      self->governance_.set_rate(messages, per, max_in_flight);
                      done(true);
                    });
}

void router::restart_workers(op_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    if (self->lifecycle_.halted()) {
      self->revive();
      return done(true);
    }
    if (self->lifecycle_.stopping()) return done(refused(refusal::conflict, self->stopped_text()));
    auto swapped = self->hot_.restart();
    done(swapped ? op_result(true) : refused(refusal::conflict, swapped.error()));
  });
}

void router::kill_workers(std::string worker_id, kill_done done) {
  boost::asio::post(
      strand_, [self = shared_from_this(), worker_id = std::move(worker_id), done = std::move(done)] {
        auto pool = self->pool_.spec.addr().str();
        auto no = [&](refusal why, std::string text) { done(kill_result::failure(std::move(text), why)); };
        if (self->lifecycle_.stopping()) return no(refusal::conflict, self->stopped_text());
        if (self->hot_.busy())
          return no(refusal::conflict, self->hot_.why_busy("restarting") + "; KILL it once it runs again");
        std::vector<std::size_t> targets;
        if (worker_id.empty()) {
          for (std::size_t i = 0; i < self->flow_.slots.size(); ++i)
            if (!self->kill_requested(i)) targets.push_back(i);
          if (targets.empty())
            return no(refusal::conflict,
                      "every worker of pool " + pool + " is already killed; RESTART brings them back");
        } else {
          std::size_t index = pool_ledger::npos;
          for (auto& w : self->flow_.ledger.snapshot())
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
        auto workers = self->flow_.ledger.snapshot();
        for (auto i : targets) ids.push_back(workers[i].id);
        logger("host.router")
            ->info("{}: KILL of {} worker(s); they finish what they hold first", pool, ids.size());
        for (auto i : targets) self->begin_kill(i);
        done(std::move(ids));
      });
}

std::string router::stopped_text() const {
  return lifecycle_.stopped_text("ddectl restart ID " + pool_.spec.system + " " + pool_.spec.isolate +
                                 ", or POST /registry/system/restart");
}

void router::begin_kill(std::size_t index) {
  // The thesis's KILL goes to the end of the worker's queue: close the slot, let the queue drain.
  flow_.slots[index].kill = kill_phase::draining;
  flow_.ledger.set_open(index, false);
  settle_kill(index);
}

void router::settle_kill(std::size_t index) {
  if (flow_.slots[index].kill != kill_phase::draining ||
      (flow_.ledger.alive(index) && flow_.ledger.in_flight(index) > 0))
    return;
  flow_.slots[index].kill = kill_phase::stopping;
  auto c = flow_.slots[index].worker;
  c->kill([self = shared_from_this(), index, c] {
    boost::asio::post(self->strand_, [self, index, c] {
      // A RESTART may have put a fresh instance in the slot meanwhile (or the pool shut down).
      if (index >= self->flow_.slots.size()) return;
      auto& s = self->flow_.slots[index];
      if (s.worker != c || s.kill != kill_phase::stopping) return;
      s.kill = kill_phase::killed;
      self->flow_.ledger.set_alive(index, false);
      self->watch_.forget(index);
      logger("host.router")->info("{}: worker {} killed", self->pool_.spec.addr().str(), c->id());
    });
  });
}

bool router::swaps(std::size_t index, bool revive_killed) const {
  // A remote worker loads its own copy when respawned; parked slots stay parked.
  return pool_.spec.workers_paths[index] == "localhost" &&
         !(kill_requested(index) && (!revive_killed || parked(index)));
}

void router::kill_instance(std::size_t index, std::function<void()> gone) {
  flow_.slots[index].worker->kill(
      [self = shared_from_this(), gone = std::move(gone)] { boost::asio::post(self->strand_, gone); });
}

void router::install(std::size_t index, std::shared_ptr<cell> fresh) {
  auto& s = flow_.slots[index];
  s.worker = std::move(fresh);
  flow_.ledger.set_alive(index, true, s.worker->id());
  flow_.ledger.set_open(index, true);
  s.kill = kill_phase::none;  // a RESTART revives killed workers
  watch_.renew(index);        // a fresh instance: quiet from now, as a started or respawned one
  s.worker->start();
}

void router::hold_messages(bool hold) {
  flow_.ledger.set_paused(hold);
  if (hold) return;
  flush_waiting();
  request_credit();
}

void router::later(std::function<void()> fn) {
  boost::asio::post(strand_, [weak = weak_from_this(), fn = std::move(fn)] {
    if (weak.lock()) fn();
  });
}

std::string router::worker_state(std::size_t index) const {
  switch (flow_.slots[index].kill) {
    case kill_phase::draining:
    case kill_phase::stopping: return "killing";
    case kill_phase::killed: return parked(index) ? "parked" : "killed";
    case kill_phase::none: break;
  }
  return flow_.ledger.alive(index) ? "running" : "down";
}

}  // namespace dde::host
