// A pool's life: its workers made and started, shut down, and what an operator asks of it while it
// runs (thesis 3.4.2 and our additions): KILL one worker or all, RESTART every worker (hot_swap swaps
// them through the slots), a new rate; the pool's side of autoscaling; its description.
#include "router.hpp"

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/runtime/load_failures.hpp"
#include "proxy_cell.hpp"

namespace dde::host {
router::router(boost::asio::io_context& io, std::shared_ptr<mqs_link> top, pool_spec spec,
               std::shared_ptr<host::clock> clock)
    : strand_(boost::asio::make_strand(io)),
      clock_(std::move(clock)),
      top_(std::move(top)),
      pool_(std::move(spec)),
      figures_(pool_.topic),
      asks_(*clock_, strand_, pool_.topic, ask_timeout),
      first_reply_(*clock_, strand_, pool_.spec, *this),
      supervision_(pool_.spec),
      watch_(*clock_, strand_, pool_.spec.ping_after, pool_.spec.pong_timeout, *this),
      governance_(pool_.spec, *top_, figures_),
      settlement_(
          pool_.spec, *top_, figures_, governance_, supervision_.poison(),
          [this](settlement::confirm_fn fn) { return on_strand(std::move(fn)); },
          [this] { return hot_.md5(); }),
      hot_(*clock_, strand_, pool_.spec, *this,
           // Only a weak reference waits with the download: the fetcher belongs to the router.
           [this](plugin_source::fetch_done fn) { return on_strand(std::move(fn)); }),
      scaling_(*clock_, strand_, pool_.spec, *this),
      lifecycle_(*clock_, strand_, pool_.spec.addr().str()) {
  touch_plugin_load_failures(pool_.topic);
}

router::~router() = default;

std::shared_ptr<cell> router::make_cell(std::size_t index, const std::shared_ptr<worker_plugin>& plugin) {
  const auto& path = pool_.spec.workers_paths[index];
  if (path != "localhost")
    return std::make_shared<proxy_cell>(strand_.get_inner_executor().context(), weak_from_this(),
                                        pool_.shared, path, index);
  auto c = std::make_shared<worker_cell>(strand_.get_inner_executor().context(), weak_from_this(),
                                         pool_.shared, plugin, index);
  c->set_gate(governance_.gate());
  return c;
}

bool router::renew_slot(std::size_t index) {
  auto c = make_cell(index, hot_.plugin_for(index));
  auto made = c->create();
  if (!made) {
    flow_.slots.down(index, made.error());
    count_plugin_load_failure(pool_.topic, made.code<plugin_failure>());
    return false;
  }
  flow_.slots.renew(index, c, pool_.spec.workers_paths[index]);
  watch_.renew(index);
  c->start();
  return true;
}

void router::set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache) {
  scaling_.set_events(events);
  hot_.set_events(std::move(events), std::move(plugin_cache));
}

void router::set_fetch_options(fetch_options options) { hot_.set_fetch_options(std::move(options)); }

void router::prepare(std::function<void(result<bool>)> ready) { hot_.prepare(std::move(ready)); }

result<bool> router::start() {
  std::size_t remote = 0;
  for (auto& path : pool_.spec.workers_paths) remote += path != "localhost";
  auto loaded = hot_.load(remote < pool_.spec.workers_paths.size() || pool_.spec.scale.enabled(), remote);
  if (!loaded) return loaded;
  auto routing = routing_policy::make(pool_.spec);
  if (!routing) return result<bool>::failure_of(routing);
  flow_.routing = std::move(routing.value());
  watch_.resize(pool_.spec.workers_paths.size());
  for (std::size_t i = 0; i < pool_.spec.workers_paths.size(); ++i) {
    const auto& path = pool_.spec.workers_paths[i];
    auto c = make_cell(i, hot_.plugin());
    auto made = c->create();
    if (!made) {
      flow_.slots.clear();
      return result<bool>::failure_of(made);
    }
    flow_.slots.add(std::move(c), path);
  }
  for (std::size_t i = 0; i < flow_.slots.size(); ++i) flow_.slots.worker(i).start();
  hot_.start();
  if (pool_.spec.partitions.count)
    top_->partition(pool_.topic, pool_.spec.partitions.count, pool_.spec.partitions.key);
  top_->attach(pool_.topic, weak_from_this());
  // Pauses asked by a replica of this pool (or echoed back from our own) come through the MQS.
  top_->set_pause_handler(pool_.topic,
                          [weak = weak_from_this()](std::chrono::milliseconds ms, const std::string& reason,
                                                    const std::string& origin) {
                            if (auto self = weak.lock()) self->on_pause(ms, reason, origin);
                          });
  logger("host.router")
      ->info("{}: {} worker(s) of {} (md5 {}), router {}, {}", pool_.spec.addr().str(), flow_.slots.size(),
             pool_.spec.uri, hot_.plugin() ? hot_.md5() : "remote", pool_.spec.router_type,
             to_string(pool_.spec.mode));
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->request_credit();
    self->hot_.poll();
    self->watch_.start();
    self->scaling_.start();
  });
  return true;
}

void router::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, done = std::move(done)]() mutable {
    self->lifecycle_.shut_down(timeout, [self, done = std::move(done)](bool timed_out) {
      if (timed_out)
        logger("host.router")
            ->warn("{}: {} message(s) still in flight after the shutdown timeout",
                   self->pool_.spec.addr().str(), self->flow_.ledger.total_in_flight());
      auto remaining = std::make_shared<std::size_t>(self->flow_.slots.size());
      auto finish = [self, remaining, done] {
        if (--*remaining > 0) return;
        boost::asio::post(self->strand_, [self, done] {
          self->top_->detach(self->pool_.topic);
          self->flow_.slots.clear();
          done();
        });
      };
      if (self->flow_.slots.empty()) {
        ++*remaining;
        finish();
        return;
      }
      self->flow_.slots.kill_each(finish);
    });
    self->hot_.stop();
    self->watch_.stop();
    self->asks_.stop();
    self->scaling_.stop();
    self->flow_.ledger.set_paused(true);
    self->top_->cancel(self->pool_.topic);
    // Held messages were never handed to a worker: give them back.
    self->give_back_held();
    self->lifecycle_.drained_if(self->flow_.ledger.total_in_flight());
  });
}

void router::enqueue(std::string topic, delivery_mode mode, const envelope& e) {
  figures_.sent();
  // An ask of one of this pool's workers (local, or remote through its proxy): its reply comes back
  // to this instance, to this router. Timed from here, on the worker's strand. A forwarded ask keeps
  // its asker's `from` and id: it is timed by the asker's router, not by this one.
  if (!e.ask_worker.empty() && e.in_reply_to.empty() && e.ask_instance == top_->instance() &&
      e.from == pool_.shared->addr().str())
    boost::asio::post(strand_, [self = shared_from_this(), id = e.id, pool = topic, at = clock_->now()] {
      self->asks_.sent(id, pool, at);
    });
  auto m = split_envelope(e, topic);
  top_->enqueue(std::move(topic), mode, std::move(m.props), std::move(m.payload));
}

bool router::claim_reply(const std::string& message_id) { return first_reply_.claim(message_id); }

void router::when_writable(std::function<void()> fn) { top_->when_writable(std::move(fn)); }

const std::string& router::instance() const { return top_->instance(); }

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
            if (!self->flow_.slots.kill_requested(i)) targets.push_back(i);
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
          if (self->flow_.slots.kill_requested(index))
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

// KILL drains a slot first: it is closed in the ledger, finishes what it holds, then its instance
// stops (before_kill runs) and stays down until a RESTART.
void router::begin_kill(std::size_t index) {
  flow_.slots.begin_kill(index);
  settle_kill(index);
}

void router::settle_kill(std::size_t index) {
  auto c = flow_.slots.drained(index);
  if (!c) return;
  c->kill([self = shared_from_this(), index, c] {
    boost::asio::post(self->strand_, [self, index, c] {
      // A RESTART may have put a fresh instance in the slot meanwhile (or the pool shut down).
      if (!self->flow_.slots.stopped(index, c)) return;
      self->watch_.forget(index);
      logger("host.router")->info("{}: worker {} killed", self->pool_.spec.addr().str(), c->id());
    });
  });
}

bool router::swaps(std::size_t index, bool revive_killed) const {
  // A remote worker loads its own copy when respawned; parked slots stay parked.
  return pool_.spec.workers_paths[index] == "localhost" &&
         !(flow_.slots.kill_requested(index) && (!revive_killed || flow_.slots.parked(index)));
}

void router::kill_instance(std::size_t index, std::function<void()> gone) {
  flow_.slots.worker(index).kill(
      [self = shared_from_this(), gone = std::move(gone)] { boost::asio::post(self->strand_, gone); });
}

void router::install(std::size_t index, std::shared_ptr<cell> fresh) {
  flow_.slots.install(index, std::move(fresh));
  watch_.renew(index);  // a fresh instance: quiet from now, as a started or respawned one
  flow_.slots.worker(index).start();
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

// Autoscaling (the autoscaler decides): the pool grows by reviving parked slots, then by adding local
// workers; it shrinks by parking idle ones (the KILL path).
void router::ask_depth(std::function<void(std::uint64_t, std::string)> answer) {
  top_->queue_depth(pool_.topic, [answer = on_strand(std::move(answer))](std::uint64_t messages,
                                                                         std::uint64_t, std::string error) {
    answer(messages, std::move(error));
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
  flow_.slots.place(index, c);
  watch_.renew(index);
  c->start();
  return true;
}

void router::grow(std::size_t want) {
  // Parked slots whose instance is gone come back first; then new slots.
  for (auto i : flow_.slots.parked_and_gone())
    if (want > 0 && add_local_worker(i)) --want;
  while (want > 0 && add_local_worker(flow_.slots.size())) --want;
}

void router::shrink(std::size_t drop) {
  // The idle ones go, newest slots first.
  for (auto i : flow_.slots.park_idle(drop)) settle_kill(i);
}

void router::scaled() {
  flush_waiting();
  request_credit();
}

// describe (GET /registry/system/{id}, the dashboard, ddectl): the thesis 3.2.2 shape of the spec,
// with the rate in force now, plus each worker's state and the pool's counters.
void router::describe(std::function<void(nlohmann::json)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] {
    const auto& r = *self;
    nlohmann::json j = to_json(r.pool_.spec);  // with the rate in force now
    j["pluginMd5"] = r.hot_.md5();
    j["workers"] = r.flow_.slots.describe([&r](std::size_t index) { return r.hot_.canary_on(index); });
    j["poolState"] = r.lifecycle_.state();
    if (r.pool_.spec.hot_deployment) {
      j["hotDeploy"] = r.hot_.describe();
    }
    if (!r.lifecycle_.last_error().empty()) j["lastError"] = r.lifecycle_.last_error();
    j["governance"] = r.governance_.describe();
    if (r.flow_.held.sub_pools()) j["subPoolState"] = r.flow_.held.describe(r.flow_.deliveries.sub_keys());
    if (first_reply_wins(r.pool_.spec.router)) {
      auto race = r.first_reply_.counts();
      j["firstReply"] = {{"answered", race.answered},
                         {"dropped", race.dropped},
                         {"copies", race.copies},
                         {"chopped", race.chopped}};
    }
    if (r.scaling_.enabled()) r.scaling_.describe(j, r.active_workers());
    if (auto latency = r.figures_.latency(); !latency.empty()) j["latency"] = std::move(latency);
    j["stats"] = r.figures_.stats();
    fn(std::move(j));
  });
}

}  // namespace dde::host
