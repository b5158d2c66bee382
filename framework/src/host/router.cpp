#include "host/router.hpp"

#include <algorithm>
#include <filesystem>

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/runtime/load_failures.hpp"
#include "host/proxy_cell.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::host {

router::router(boost::asio::io_context& io, std::shared_ptr<mqs_link> top, pool_spec spec)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      top_(std::move(top)),
      spec_(std::move(spec)),
      topic_(spec_.addr().topic()),
      shared_spec_(std::make_shared<const pool_spec>(spec_)),
      ledger_(spec_.router, std::size_t(spec_.credits)),
      subs_(spec_.sub_pools),
      deployed_paths_(spec_.workers_paths),
      parked_(spec_.workers_paths.size(), false),
      scaler_(spec_.scale),
      gate_(std::make_shared<rate_gate>(spec_.rate_messages, spec_.rate_per, spec_.max_in_flight)) {}

router::~router() = default;

std::shared_ptr<cell> router::make_cell(std::size_t index, const std::shared_ptr<worker_plugin>& plugin) {
  const auto& path = spec_.workers_paths[index];
  if (path != "localhost") return std::make_shared<proxy_cell>(io_, weak_from_this(), shared_spec_, path, index);
  auto c = std::make_shared<worker_cell>(io_, weak_from_this(), shared_spec_, plugin, index);
  c->set_gate(gate_);
  return c;
}

void router::set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache) {
  events_ = std::move(events);
  plugin_cache_ = std::move(plugin_cache);
}

void router::set_fetch_options(fetch_options options) { fetch_options_ = std::move(options); }

void router::prepare(std::function<void(result<bool>)> ready) {
  // After a crash the activator has the pool start from the kept copy of the last good version.
  if (!is_remote_uri(spec_.uri) || !spec_.last_good_copy.empty()) return ready(true);
  fetch_remote([ready](router& self, fetch_result fetched) {
    using kind = fetch_result::kind;
    if (fetched.what != kind::fetched)
      return ready(result<bool>::failure(
          "cannot fetch plugin " + self.spec_.uri + ": " +
              (fetched.what == kind::failed ? fetched.error
                                            : "the server answered 304 to a request without validators"),
          plugin_failure::fetch));
    self.hot_.fetched_file = fetched.file;
    self.hot_.validators = fetched.validators;
    ready(true);
  });
}

void router::fetch_remote(std::function<void(router&, fetch_result)> fn) {
  if (!fetcher_) fetcher_ = std::make_unique<plugin_fetcher>(fetch_options_);
  // Only a weak reference waits with the download: the fetcher belongs to the router.
  fetcher_->fetch(spec_.uri, spec_.system + "." + spec_.isolate, hot_.validators,
                  [weak = weak_from_this(), fn = std::move(fn)](fetch_result fetched) {
                    auto self = weak.lock();
                    if (!self) return;
                    boost::asio::post(self->strand_, [self, fn, fetched = std::move(fetched)]() mutable {
                      fn(*self, std::move(fetched));
                    });
                  });
}

std::string router::with_source(const std::string& error) const {
  return is_remote_uri(spec_.uri) ? error + " (downloaded from " + spec_.uri + ")" : error;
}

std::filesystem::path router::running_file() const {
  return is_remote_uri(spec_.uri) ? hot_.fetched_file : std::filesystem::path(spec_.plugin_path());
}

result<bool> router::start() {
  bool any_local = false;
  for (auto& path : spec_.workers_paths) any_local = any_local || path == "localhost";
  if (any_local || spec_.scale.enabled()) {
    // Remote workers load the plugin on their node; a local one must load here. After a new version
    // crashed the isolate system, the activator has it start from the last version that worked.
    auto path = spec_.last_good_copy.empty() ? running_file() : std::filesystem::path(spec_.last_good_copy);
    auto plugin = worker_plugin::load(path, spec_.sha256);
    if (!plugin) return result<bool>::failure_of(plugin, [this](auto& e) { return with_source(e); });
    plugin_ = plugin.value();
  }
  if (spec_.router == router_kind::custom) {
    auto rp = router_plugin::load(spec_.router_uri);
    if (!rp) return result<bool>::failure_of(rp);
    auto policy = rp.value()->create();
    if (!policy) return result<bool>::failure_of(policy);
    router_plugin_ = rp.value();
    policy_ = std::move(policy.value());
  }
  cell_errors_.assign(spec_.workers_paths.size(), {});
  kills_.assign(spec_.workers_paths.size(), kill_phase::none);
  done_per_worker_.assign(spec_.workers_paths.size(), 0);
  last_activity_.assign(spec_.workers_paths.size(), std::chrono::steady_clock::now());
  ping_out_.assign(spec_.workers_paths.size(), 0);
  for (std::size_t i = 0; i < spec_.workers_paths.size(); ++i) {
    const auto& path = spec_.workers_paths[i];
    auto c = make_cell(i, plugin_);
    auto made = c->create();
    if (!made) {
      cells_.clear();
      return result<bool>::failure_of(made);
    }
    ledger_.add_worker(c->id(), path);
    // A proxy's slot opens once its remote worker is spawned.
    if (path != "localhost") ledger_.set_alive(i, false);
    cells_.push_back(std::move(c));
  }
  for (auto& c : cells_) c->start();
  if (!spec_.crashed_md5.empty()) {
    hot_.refused_md5 = spec_.crashed_md5;
    hot_.state = "refused";
    hot_.error = "version " + spec_.crashed_md5 + " crashed the isolate system (" + spec_.crash_reason +
                 ") before it finished a message; running the last version that worked";
    hot_.proving = false;
    count_plugin_load_failure(topic_, plugin_failure::crashed);
    logger("host.router")->error("{}: {}", spec_.addr().str(), hot_.error);
  }
  top_->attach(topic_, weak_from_this());
  // Pauses asked by a replica of this pool (or echoed back from our own) come through the MQS.
  top_->set_pause_handler(topic_, [weak = weak_from_this()](std::chrono::milliseconds ms, const std::string& reason,
                                                             const std::string& origin) {
    if (auto self = weak.lock()) self->on_pause(ms, reason, origin);
  });
  logger("host.router")
      ->info("{}: {} worker(s) of {} (md5 {}), router {}, {}", spec_.addr().str(), cells_.size(), spec_.uri,
             plugin_ ? plugin_->object().md5() : "remote", spec_.router_type, to_string(spec_.mode));
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->request_credit();
    if (self->spec_.hot_deployment && self->plugin_) self->watch_plugin();
    if (self->spec_.ping_after.count() > 0) self->watch_workers();
    if (self->spec_.scale.enabled()) self->watch_scale();
  });
  return true;
}

void router::watch_workers() {
  if (stopping_) return;
  if (!guard_timer_) guard_timer_ = std::make_unique<boost::asio::steady_timer>(strand_);
  auto period = std::max(spec_.ping_after / 2, std::chrono::milliseconds(20));
  guard_timer_->expires_after(std::min(period, spec_.pong_timeout));
  guard_timer_->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopping_) return;
    auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < self->cells_.size(); ++i) {
      if (!self->ledger_.alive(i) || self->ledger_.in_flight(i) == 0) continue;
      if (self->ping_out_[i] != 0) {
        // PING unanswered: the worker's thread is stuck inside the plugin.
        if (now - self->last_activity_[i] > self->spec_.ping_after + self->spec_.pong_timeout) self->replace_stuck(i);
        continue;
      }
      if (now - self->last_activity_[i] < self->spec_.ping_after) continue;
      auto ping = self->next_ping_++;
      self->ping_out_[i] = ping;
      self->cells_[i]->ping([self, i, ping](bool busy, std::chrono::milliseconds busy_for) {
        boost::asio::post(self->strand_, [self, i, ping, busy, busy_for] { self->on_pong(i, ping, busy, busy_for); });
      });
    }
    self->watch_workers();
  });
}

void router::on_pong(std::size_t index, std::uint64_t ping, bool busy, std::chrono::milliseconds busy_for) {
  if (index >= ping_out_.size() || ping_out_[index] != ping) return;
  ping_out_[index] = 0;
  last_activity_[index] = std::chrono::steady_clock::now();
  if (busy && busy_for >= spec_.ping_after) {
    // PONG, but the message it holds has not been done() for too long: a failure, for supervision.
    cells_[index]->fail_current("did not call done() within " + std::to_string(spec_.ping_after.count()) +
                                " ms (starvation guard)");
    return;
  }
  request_credit();  // PONG: pull again, in case a pull went astray (thesis 3.2.1)
}

void router::replace_stuck(std::size_t index) {
  logger("host.router")->error("{}: worker {} did not answer PING within {} ms; replacing it (its thread stays "
                               "blocked in the plugin)", spec_.addr().str(), cells_[index]->id(),
                               spec_.pong_timeout.count());
  std::vector<std::uint64_t> held;
  for (auto& [id, d] : deliveries_)
    if (std::find(d.pending.begin(), d.pending.end(), index) != d.pending.end()) held.push_back(id);
  for (auto id : held) finish_one(index, id, true);
  ping_out_[index] = 0;
  if (kill_requested(index)) {
    // It was being killed: its before_kill cannot run on a blocked thread, and it stays down.
    kills_[index] = kill_phase::killed;
    ledger_.set_alive(index, false);
    return;
  }
  ++stats_.restarts;
  last_error_ = "worker did not answer PING";
  if (spec_.workers_paths[index] != "localhost" || !plugin_) return;
  auto c = make_cell(index, plugin_);
  auto made = c->create();
  if (!made) {
    ledger_.set_alive(index, false);
    cell_errors_[index] = made.error();
    count_plugin_load_failure(topic_, made.code<plugin_failure>());
    return;
  }
  cells_[index] = c;
  ledger_.set_alive(index, true, c->id());
  c->start();
  request_credit();
}

void router::watch_plugin() {
  if (stopping_) return;
  if (!hot_.timer) hot_.timer = std::make_unique<boost::asio::steady_timer>(strand_);
  hot_.timer->expires_after(spec_.hot_interval);
  hot_.timer->async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stopping_) return;
    self->check_plugin();
    self->watch_plugin();
  });
}

void router::check_plugin() {
  if (hot_.swapping || restarting_pool_) return;
  if (is_remote_uri(spec_.uri)) {
    // One poll at a time: a slow server delays the next one rather than piling them up.
    if (hot_.fetching) return;
    hot_.fetching = true;
    return fetch_remote(
        [](router& self, fetch_result fetched) { self.on_plugin_fetched(std::move(fetched)); });
  }
  auto md5 = file_md5(spec_.plugin_path());
  if (md5.empty())
    return refuse_version("missing", "plugin file " + spec_.plugin_path() + " is missing or unreadable",
                          plugin_failure::missing);
  if (md5 == plugin_->object().md5() || md5 == hot_.refused_md5) return;
  logger("host.router")->info("{}: plugin {} changed (md5 {}): loading the new version", spec_.addr().str(),
                              spec_.uri, md5);
  // Everything that can refuse the new version happens before the old one stops.
  auto loaded = worker_plugin::load(spec_.plugin_path(), spec_.sha256);
  if (!loaded) return refuse_version(md5, loaded.error(), loaded.code<plugin_failure>());
  if (auto swapped = begin_swap(loaded.value(), false); !swapped)
    refuse_version(md5, swapped.error(), swapped.code<plugin_failure>());
}

void router::on_plugin_fetched(fetch_result fetched) {
  hot_.fetching = false;
  auto forget = [this](const std::filesystem::path& file) {
    std::error_code ignored;
    if (!file.empty() && file != hot_.fetched_file) std::filesystem::remove(file, ignored);
  };
  if (stopping_) return forget(fetched.file);
  if (fetched.what == fetch_result::kind::failed) return note_fetch_error(fetched.error);
  note_fetch_error({});
  if (fetched.what == fetch_result::kind::not_modified) return;
  // A swap or restart began meanwhile: keep the old validators, so the next poll asks again.
  if (hot_.swapping || restarting_pool_) return forget(fetched.file);
  hot_.validators = fetched.validators;
  if (fetched.md5 == plugin_->object().md5() || fetched.md5 == hot_.refused_md5) return forget(fetched.file);
  logger("host.router")
      ->info("{}: plugin {} changed (md5 {}): loading the new version", spec_.addr().str(), spec_.uri,
             fetched.md5);
  auto loaded = worker_plugin::load(fetched.file, spec_.sha256);
  if (!loaded) {
    forget(fetched.file);
    return refuse_version(fetched.md5, with_source(loaded.error()), loaded.code<plugin_failure>());
  }
  hot_.next_file = fetched.file;
  if (auto swapped = begin_swap(loaded.value(), false); !swapped) {
    hot_.next_file.clear();
    forget(fetched.file);
    return refuse_version(fetched.md5, swapped.error(), swapped.code<plugin_failure>());
  }
}

void router::note_fetch_error(const std::string& error) {
  if (error == hot_.fetch_error) return;
  if (error.empty())
    logger("host.router")->info("{}: plugin {} can be fetched again", spec_.addr().str(), spec_.uri);
  else
    logger("host.router")
        ->error("{}: cannot fetch plugin {}: {}; the running version keeps serving", spec_.addr().str(),
                spec_.uri, error);
  hot_.fetch_error = error;
}

result<bool> router::begin_swap(std::shared_ptr<worker_plugin> plugin, bool is_restart, bool revive_killed) {
  std::vector<std::shared_ptr<cell>> fresh(cells_.size());
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (spec_.workers_paths[i] != "localhost") continue;  // a remote worker loads its own copy when respawned
    if (kill_requested(i) && (!revive_killed || parked(i))) continue;  // parked slots stay parked
    auto c = make_cell(i, plugin);
    auto made = c->create();
    if (!made) return made;
    fresh[i] = std::move(c);
  }
  if (!is_restart && events_)
    events_({{"event", "pluginSwapping"}, {"isolateName", spec_.isolate}, {"md5", plugin->object().md5()}});
  // RESTART (thesis 3.4.2): stop pulling, let in-flight messages finish, then swap.
  hot_.swapping = true;
  hot_.is_restart = is_restart;
  hot_.swap_started = std::chrono::steady_clock::now();
  hot_.next_plugin = std::move(plugin);
  hot_.next_cells = std::move(fresh);
  ledger_.set_paused(true);
  if (ledger_.total_in_flight() == 0) finish_swap();
  return true;
}

void router::set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight,
                      std::function<void(std::string)> done) {
  boost::asio::post(strand_, [self = shared_from_this(), messages, per, max_in_flight, done = std::move(done)] {
    if (self->stopping_) return done("pool " + self->spec_.addr().str() + " is stopped");
    self->spec_.rate_messages = messages;
    self->spec_.rate_per = per;
    self->spec_.max_in_flight = max_in_flight;
    logger("host.router")->info("{}: rate {} per {} ms, maxInFlight {} (0 = none)", self->spec_.addr().str(), messages,
                                per.count(), max_in_flight);
    self->gate_->set(messages, per, max_in_flight);
    done({});
  });
}

void router::restart_workers(std::function<void(std::string)> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    if (self->stopping_) return done("pool " + self->spec_.addr().str() + " is stopped");
    if (self->hot_.swapping || self->restarting_pool_)
      return done("pool " + self->spec_.addr().str() + " is already restarting");
    if (!self->plugin_) return done("pool " + self->spec_.addr().str() + " has no local workers to restart");
    logger("host.router")->info("{}: RESTART of every worker", self->spec_.addr().str());
    auto swapped = self->begin_swap(self->plugin_, true, true);
    done(swapped ? std::string() : swapped.error());
  });
}

void router::kill_workers(std::string worker_id,
                          std::function<void(std::string, std::vector<std::string>)> done) {
  boost::asio::post(
      strand_, [self = shared_from_this(), worker_id = std::move(worker_id), done = std::move(done)] {
        auto pool = self->spec_.addr().str();
        if (self->stopping_) return done("pool " + pool + " is stopped", {});
        if (self->hot_.swapping || self->restarting_pool_)
          return done("pool " + pool + " is restarting; KILL it once it runs again", {});
        std::vector<std::size_t> targets;
        if (worker_id.empty()) {
          for (std::size_t i = 0; i < self->cells_.size(); ++i)
            if (!self->kill_requested(i)) targets.push_back(i);
          if (targets.empty())
            return done("every worker of pool " + pool + " is already killed; RESTART brings them back", {});
        } else {
          std::size_t index = pool_ledger::npos;
          for (auto& w : self->ledger_.snapshot())
            if (w.id == worker_id) index = w.index;
          if (index == pool_ledger::npos)
            return done("no worker \"" + worker_id + "\" in pool " + pool +
                            " (GET /registry/system/{bootstrapperId} lists them)",
                        {});
          if (self->kill_requested(index))
            return done("worker " + worker_id + " of pool " + pool + " is already killed", {});
          targets.push_back(index);
        }
        std::vector<std::string> ids;
        for (auto i : targets) ids.push_back(self->ledger_.snapshot()[i].id);
        logger("host.router")
            ->info("{}: KILL of {} worker(s); they finish what they hold first", pool, ids.size());
        for (auto i : targets) self->begin_kill(i);
        done({}, std::move(ids));
      });
}

void router::begin_kill(std::size_t index) {
  // The thesis's KILL goes to the end of the worker's queue: close the slot, let the queue drain.
  kills_[index] = kill_phase::draining;
  ledger_.set_open(index, false);
  settle_kill(index);
}

void router::settle_kill(std::size_t index) {
  if (kills_[index] != kill_phase::draining || (ledger_.alive(index) && ledger_.in_flight(index) > 0)) return;
  kills_[index] = kill_phase::stopping;
  auto c = cells_[index];
  c->kill([self = shared_from_this(), index, c] {
    boost::asio::post(self->strand_, [self, index, c] {
      // A RESTART may have put a fresh instance in the slot meanwhile.
      if (self->cells_[index] != c || self->kills_[index] != kill_phase::stopping) return;
      self->kills_[index] = kill_phase::killed;
      self->ledger_.set_alive(index, false);
      self->ping_out_[index] = 0;
      logger("host.router")->info("{}: worker {} killed", self->spec_.addr().str(), c->id());
    });
  });
}

std::string router::worker_state(std::size_t index) const {
  switch (kills_[index]) {
    case kill_phase::draining:
    case kill_phase::stopping:
      return "killing";
    case kill_phase::killed:
      return parked(index) ? "parked" : "killed";
    case kill_phase::none:
      break;
  }
  return ledger_.alive(index) ? "running" : "down";
}

void router::version_proven() {
  hot_.proving = false;
  if (!events_ || plugin_cache_.empty() || !plugin_) return;
  auto md5 = plugin_->object().md5();
  // The file may have changed since it was loaded: keep a copy only of exactly this version.
  auto source = running_file();
  if (source.empty() || file_md5(source) != md5) return;
  std::error_code ec;
  std::filesystem::create_directories(plugin_cache_, ec);
  auto copy = std::filesystem::path(plugin_cache_) / (spec_.system + "." + spec_.isolate + "." + md5 + ".so");
  if (!std::filesystem::exists(copy, ec)) std::filesystem::copy_file(source, copy, ec);
  if (ec) {
    logger("host.router")->warn("{}: cannot keep a copy of plugin {}: {}", spec_.addr().str(), md5, ec.message());
    return;
  }
  events_({{"event", "pluginGood"}, {"isolateName", spec_.isolate}, {"md5", md5}, {"path", copy.string()}});
}

void router::refuse_version(const std::string& md5, const std::string& why, plugin_failure reason) {
  if (md5 == hot_.refused_md5 && hot_.state == "refused") return;
  hot_.refused_md5 = md5;
  hot_.state = "refused";
  hot_.error = why;
  count_plugin_load_failure(topic_, reason);
  logger("host.router")
      ->error("{}: new plugin version refused, the running one ({}) keeps serving: {}", spec_.addr().str(),
              plugin_->object().md5(), why);
}

void router::finish_swap() {
  if (hot_.swap_killing) return;
  hot_.swap_killing = true;
  auto remaining = std::make_shared<std::size_t>(0);
  for (std::size_t i = 0; i < cells_.size(); ++i)
    if (hot_.next_cells[i]) ++*remaining;
  auto swap_in = [self = shared_from_this()] {
    auto& h = self->hot_;
    for (std::size_t i = 0; i < self->cells_.size(); ++i) {
      if (!h.next_cells[i]) continue;
      self->cells_[i] = std::move(h.next_cells[i]);
      self->ledger_.set_alive(i, true, self->cells_[i]->id());
      self->ledger_.set_open(i, true);
      self->kills_[i] = kill_phase::none;  // a RESTART revives killed workers
      self->cells_[i]->start();
    }
    self->plugin_ = std::move(h.next_plugin);
    h.next_cells.clear();
    h.swapping = false;
    h.swap_killing = false;
    if (h.is_restart) {
      ++self->stats_.restarts;
    } else {
      h.proving = true;
      h.state = "running";
      h.error.clear();
      h.refused_md5.clear();
      ++h.swaps;
      if (!h.next_file.empty()) {
        // The old version's download is no longer needed (its code lives on in a private copy).
        std::error_code ignored;
        if (!h.fetched_file.empty() && h.fetched_file != h.next_file)
          std::filesystem::remove(h.fetched_file, ignored);
        h.fetched_file = std::move(h.next_file);
        h.next_file.clear();
      }
    }
    h.last_pause_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                            h.swap_started).count();
    logger("host.router")->info("{}: now running plugin md5 {} (swap {}, paused {} ms)", self->spec_.addr().str(),
                                self->plugin_->object().md5(), h.swaps, h.last_pause_ms);
    self->ledger_.set_paused(false);
    self->flush_waiting();
    self->request_credit();
  };
  if (*remaining == 0) return swap_in();
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (!hot_.next_cells[i]) continue;
    // before_kill runs on the old instance; the new one starts only after every old one is gone.
    cells_[i]->kill([self = shared_from_this(), remaining, swap_in] {
      boost::asio::post(self->strand_, [remaining, swap_in] {
        if (--*remaining == 0) swap_in();
      });
    });
  }
}

void router::request_credit() {
  if (stopping_) return;
  std::size_t n = ledger_.take_credit_request();
  if (n > 0) top_->pull(topic_, spec_.mode, n, ledger_.consumers());
}

void router::deliver(std::uint64_t generation, std::uint64_t tag, bool redelivered, nlohmann::json props,
                     std::string body) {
  boost::asio::post(strand_, [self = shared_from_this(), generation, tag, redelivered, props = std::move(props),
                              body = std::move(body)]() mutable {
    self->ledger_.on_delivery();
    ++self->stats_.delivered;
    if (redelivered) ++self->stats_.redelivered;
    self->dispatch(generation, tag, to_message(join_envelope(props, self->topic_, std::move(body)), redelivered));
  });
}

std::vector<std::size_t> router::pick(const message& msg) {
  if (policy_) return ledger_.select_custom(policy_->select_worker(msg, ledger_.snapshot()));
  if (spec_.router != router_kind::consistent_hash) return ledger_.select();
  // The key's value as it is for a string, as JSON otherwise; a message without it hashes by its id.
  if (msg.body().is_object()) {
    auto it = msg.body().find(spec_.hash_key);
    if (it != msg.body().end() && !it->is_null()) return ledger_.select(it->is_string() ? it->get<std::string>() : it->dump());
  }
  return ledger_.select(msg.id());
}

bool router::dispatch(std::uint64_t generation, std::uint64_t tag, message msg, bool front) {
  std::string sub_key;
  if (subs_.enabled()) {
    sub_key = subs_.key_of(msg);
    if (!subs_.has_room(sub_key)) {
      // Its sub-pool is full: it waits for one of its key to finish while other keys go on. Held
      // messages use the pool's room, so the router never asks the MQS for more than it can hold.
      sub_waiting_[sub_key].push_back({generation, tag, std::move(msg)});
      ledger_.set_held(++sub_held_);
      return true;
    }
  }
  if (stopping_ || hot_.swapping || restarting_pool_) {
    waiting_.push_back({generation, tag, std::move(msg)});
    return false;
  }
  std::vector<std::size_t> targets = pick(msg);
  if (targets.empty()) {
    // No worker has room (for consistent-hash: the key's worker has none): hold it until one finishes.
    if (front)
      waiting_.push_front({generation, tag, std::move(msg)});
    else
      waiting_.push_back({generation, tag, std::move(msg)});
    return false;
  }
  std::uint64_t id = next_delivery_++;
  if (subs_.enabled()) subs_.start(sub_key);
  auto& d = deliveries_[id];
  d.generation = generation;
  d.tag = tag;
  d.pending = targets;
  d.failed = false;
  d.sub_key = std::move(sub_key);
  start_race(id, d, msg);
  auto now = std::chrono::steady_clock::now();
  for (std::size_t k = 0; k < targets.size(); ++k) {
    ledger_.assign(targets[k]);
    if (ledger_.in_flight(targets[k]) == 1) last_activity_[targets[k]] = now;
    if (k + 1 == targets.size())
      cells_[targets[k]]->post_message(std::move(msg), id);
    else
      cells_[targets[k]]->post_message(msg, id);
  }
  return true;
}

void router::deliver_reply(envelope e) {
  boost::asio::post(strand_, [self = shared_from_this(), e = std::move(e)]() mutable {
    std::size_t index = self->ledger_.find(e.to_worker);
    if (index == pool_ledger::npos) {
      // The asking instance is gone (restarted or removed): the reply has nowhere to go.
      ++self->stats_.replies_dropped;
      logger("host.router")->debug("{}: reply for gone worker {} dropped", self->spec_.addr().str(), e.to_worker);
      return;
    }
    ++self->stats_.replies;
    self->cells_[index]->post_reply(to_message(std::move(e), false));
  });
}

void router::on_connected() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->ledger_.reset_requested();
    self->request_credit();
  });
}

void router::worker_done(std::size_t index, std::uint64_t delivery_id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id] {
    ++self->stats_.done;
    self->finish_one(index, delivery_id, false);
  });
}

void router::worker_rate_limited(std::size_t index, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                                 std::string reason, message m) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, delay, reason = std::move(reason),
                              m = std::move(m)]() mutable {
    ++self->stats_.rate_limited;
    // The whole pool pauses, here and (through the MQS) in every replica, not only the worker that was hit.
    self->pause_pool(std::clamp(delay, std::chrono::milliseconds(0), self->spec_.backoff.max_delay), reason, true);
    auto it = self->deliveries_.find(delivery_id);
    if (it == self->deliveries_.end()) return;
    auto& d = it->second;
    if (std::find(d.pending.begin(), d.pending.end(), index) == d.pending.end()) return;
    if (d.attempts < self->spec_.backoff.retry_limit && !self->stopping_) {
      // Tried again by the same worker once the pause is over (its gate holds it until then); it keeps
      // its place in the pool's accounting meanwhile.
      ++d.attempts;
      ++self->stats_.retries;
      self->last_activity_[index] = std::chrono::steady_clock::now();
      self->cells_[index]->post_message(std::move(m), delivery_id);
      return;
    }
    auto why = "rate limited " + std::to_string(d.attempts + 1) + " time(s), retry limit " +
               std::to_string(self->spec_.backoff.retry_limit) + " reached; last reason: " + reason;
    if (self->stopping_) {
      self->finish_one(index, delivery_id, true, false);  // back to the broker: another replica may take it
      return;
    }
    self->dead_letter(m, d.attempts + 1, why);
    self->finish_one(index, delivery_id, false, false);  // acked: it is in the dead-letter queue now
  });
}

void router::pause_pool(std::chrono::milliseconds delay, const std::string& reason, bool broadcast) {
  if (delay.count() <= 0) return;
  auto until = std::chrono::steady_clock::now() + delay;
  gate_->pause_until(until);  // the worker's cell may have paused it already
  // One announcement per extension of the pause, however many workers were hit.
  if (until <= announced_until_ + std::chrono::milliseconds(5)) return;
  announced_until_ = until;
  pause_reason_ = reason;
  ++(broadcast ? stats_.pauses : stats_.remote_pauses);
  logger("host.router")->warn("{}: rate limited ({}): no message starts for {} ms{}", spec_.addr().str(), reason,
                              delay.count(), broadcast ? "" : " (paused by a replica)");
  if (broadcast) top_->pause(topic_, delay, reason);
}

void router::on_pause(std::chrono::milliseconds delay, std::string reason, std::string origin) {
  boost::asio::post(strand_, [self = shared_from_this(), delay, reason = std::move(reason), origin = std::move(origin)] {
    if (self->stopping_) return;
    // Our own announcement comes back too: it changes nothing.
    auto own = "/" + self->top_->instance();
    if (origin.size() >= own.size() && origin.compare(origin.size() - own.size(), own.size(), own) == 0) return;
    self->pause_pool(std::min(delay, self->spec_.backoff.max_delay), reason + " [from " + origin + "]", false);
  });
}

void router::dead_letter(const message& m, int attempts, const std::string& reason) {
  auto e = to_envelope(m);
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  e.dead_letter = {{"reason", reason}, {"attempts", attempts}, {"pool", spec_.addr().str()}, {"at", at.count()}};
  ++stats_.dead_lettered;
  logger("host.router")->error("{}: message {} dead-lettered to dde.dead.{}: {}", spec_.addr().str(), m.id(), topic_,
                               reason);
  // Whole, as JSON in the body: whoever inspects a dead-letter queue sees every field in one place.
  top_->enqueue("dde.dead." + topic_, delivery_mode::at_least_once, {}, encode_envelope(e));
}

void router::worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what, std::string new_id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what),
                              new_id = std::move(new_id)] {
    // A message the worker gave back unfinished: it returns to the broker (at-least-once).
    if (delivery_id != 0) return self->finish_one(index, delivery_id, true);
    if (new_id.empty()) {
      // The instance is down (it could not be recreated, or a remote link dropped): no more messages for it.
      self->ledger_.set_alive(index, false);
      if (index < self->cell_errors_.size()) self->cell_errors_[index] = what;
      if (self->kill_requested(index)) self->settle_kill(index);
    } else {
      ++self->stats_.restarts;
      self->ledger_.set_alive(index, true, new_id);
    }
    self->request_credit();
  });
}

void router::worker_up(std::size_t index, std::string id) {
  boost::asio::post(strand_, [self = shared_from_this(), index, id = std::move(id)] {
    if (self->stopping_) return;
    if (index < self->kills_.size() &&
        (self->kills_[index] == kill_phase::stopping || self->kills_[index] == kill_phase::killed))
      return;
    self->ledger_.set_alive(index, true, id);
    if (index < self->cell_errors_.size()) self->cell_errors_[index].clear();
    self->request_credit();
  });
}

void router::worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, what = std::move(what)] {
    ++self->stats_.failed;
    self->last_error_ = what;
    if (delivery_id != 0) self->finish_one(index, delivery_id, true);
    if (self->stopping_ || index >= self->cells_.size()) return;
    auto& cell = self->cells_[index];
    std::chrono::milliseconds backoff{0};
    switch (self->spec_.supervision.kind) {
      case strategy::resume:
        cell->supervise(directive::resume, backoff);
        break;
      case strategy::stop:
        self->ledger_.set_alive(index, false);
        self->cell_errors_[index] = "stopped after: " + what;
        cell->supervise(directive::stop, backoff);
        if (self->kill_requested(index)) self->settle_kill(index);
        break;
      case strategy::restart:
        if (!self->allow_restart(backoff)) return self->stop_pool(what);
        ++self->stats_.restarts;
        cell->supervise(directive::restart, backoff);
        break;
      case strategy::escalate:
        if (!self->allow_restart(backoff)) return self->stop_pool(what);
        self->restart_pool(what);
        break;
    }
  });
}

bool router::allow_restart(std::chrono::milliseconds& backoff) {
  const auto& sup = spec_.supervision;
  auto now = std::chrono::steady_clock::now();
  while (!restarts_.empty() && now - restarts_.front() > sup.within) restarts_.pop_front();
  if (int(restarts_.size()) >= sup.max_restarts) return false;
  restarts_.push_back(now);
  // Back off more the more often it failed lately: backoff, 2x, 4x ... at most 30 s.
  auto factor = std::min<std::size_t>(restarts_.size() - 1, 10);
  backoff = std::min(sup.backoff * (1 << factor), std::chrono::milliseconds(30000));
  return true;
}

void router::stop_pool(const std::string& why) {
  if (stopping_) return;
  state_ = "stopped: " + std::to_string(spec_.supervision.max_restarts) + " restarts within " +
           std::to_string(spec_.supervision.within.count()) + " ms; last failure: " + why;
  logger("host.router")->error("{}: {}", spec_.addr().str(), state_);
  stopping_ = true;
  ledger_.set_paused(true);
  top_->cancel(topic_);
  give_back_held();
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    ledger_.set_alive(i, false);
    cells_[i]->kill([] {});
  }
}

void router::restart_pool(const std::string& why) {
  // Escalation: the whole pool gets fresh instances; unfinished messages go back to the broker.
  if (restarting_pool_) return;
  restarting_pool_ = true;
  ++stats_.restarts;
  logger("host.router")->warn("{}: restarting every worker (escalated: {})", spec_.addr().str(), why);
  ledger_.set_paused(true);
  auto remaining = std::make_shared<std::size_t>(cells_.size());
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    cells_[i]->kill([self = shared_from_this(), remaining] {
      boost::asio::post(self->strand_, [self, remaining] {
        if (--*remaining > 0 || self->stopping_) return;
        for (std::size_t k = 0; k < self->cells_.size(); ++k) {
          if (self->kill_requested(k)) {  // killed workers stay down until a RESTART
            self->kills_[k] = kill_phase::killed;
            self->ledger_.set_alive(k, false);
            continue;
          }
          const auto& path = self->spec_.workers_paths[k];
          auto c = self->make_cell(k, self->plugin_);
          auto made = c->create();
          self->ledger_.set_alive(k, made && path == "localhost", c->id());
          if (!made) {
            self->cell_errors_[k] = made.error();
            count_plugin_load_failure(self->topic_, made.code<plugin_failure>());
          }
          self->cells_[k] = c;
          if (made) c->start();
        }
        self->restarting_pool_ = false;
        self->ledger_.set_paused(false);
        self->flush_waiting();
        self->request_credit();
      });
    });
  }
}

void router::enqueue(std::string topic, delivery_mode mode, const envelope& e) {
  sent_.fetch_add(1, std::memory_order_relaxed);
  auto m = split_envelope(e, topic);
  top_->enqueue(std::move(topic), mode, std::move(m.props), std::move(m.payload));
}

void router::when_writable(std::function<void()> fn) { top_->when_writable(std::move(fn)); }

const std::string& router::instance() const { return top_->instance(); }

void router::flush_waiting() {
  while (!waiting_.empty() && !stopping_ && !hot_.swapping && !restarting_pool_) {
    auto w = std::move(waiting_.front());
    waiting_.pop_front();
    if (!dispatch(w.generation, w.tag, std::move(w.msg), true)) break;
  }
}

void router::give_back_held() {
  auto give_back = [this](std::deque<waiting>& held) {
    for (auto& w : held)
      if (spec_.mode == delivery_mode::at_least_once) top_->nack(w.generation, w.tag, true);
    held.clear();
  };
  give_back(waiting_);
  for (auto& [key, held] : sub_waiting_) give_back(held);
  sub_waiting_.clear();
  sub_held_ = 0;
  ledger_.set_held(0);
}

void router::finish_one(std::size_t index, std::uint64_t delivery_id, bool failed, bool proven) {
  // Each (message, worker) finishes once: a late report (e.g. from a replaced stuck worker) is ignored.
  auto it = deliveries_.find(delivery_id);
  if (it == deliveries_.end()) return;
  auto& pending = it->second.pending;
  auto at = std::find(pending.begin(), pending.end(), index);
  if (at == pending.end()) return;
  pending.erase(at);
  ledger_.finish(index);
  if (kill_requested(index)) settle_kill(index);
  last_activity_[index] = std::chrono::steady_clock::now();
  if (!failed) ++done_per_worker_[index];
  if (!failed && proven && hot_.proving && !hot_.swapping) version_proven();
  auto& d = it->second;
  bool raced = !d.message_id.empty();
  if (raced)
    settle_copy(delivery_id, d, failed);
  else
    d.failed = d.failed || failed;
  std::string sub_key;
  bool ended = d.pending.empty();
  if (ended && raced) d.failed = end_race(d);
  if (ended) {
    sub_key = std::move(d.sub_key);
    if (spec_.mode == delivery_mode::at_least_once && !d.acked) {
      // A failed message goes back to the queue (whose delivery limit dead-letters a poison one), or
      // straight to dde.dead.<queue> when the pool says so.
      if (d.failed)
        top_->nack(d.generation, d.tag, !spec_.supervision.dead_letter);
      else {
        top_->ack(d.generation, d.tag);
        ++stats_.acked;
      }
    }
    deliveries_.erase(it);
  }
  if (ended && subs_.enabled()) {
    // Its sub-pool has room again: the oldest message waiting for it goes to the general queue.
    subs_.finish(sub_key);
    auto held = sub_waiting_.find(sub_key);
    if (held != sub_waiting_.end() && !held->second.empty()) {
      auto w = std::move(held->second.front());
      held->second.pop_front();
      if (held->second.empty()) sub_waiting_.erase(held);
      ledger_.set_held(--sub_held_);
      waiting_.push_front(std::move(w));
    }
  }
  // Held messages go out as workers get room (not while a swap is under way: they wait for the new ones).
  flush_waiting();
  request_credit();
  check_drained();
  if (hot_.swapping && !hot_.next_cells.empty() && ledger_.total_in_flight() == 0) finish_swap();
}

void router::shutdown(std::chrono::milliseconds timeout, std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, done = std::move(done)]() mutable {
    self->stopping_ = true;
    if (self->hot_.timer) self->hot_.timer->cancel();
    if (self->guard_timer_) self->guard_timer_->cancel();
    self->ledger_.set_paused(true);
    self->top_->cancel(self->topic_);
    // Held messages were never handed to a worker: give them back.
    self->give_back_held();
    self->drained_ = [self, done = std::move(done)] {
      auto remaining = std::make_shared<std::size_t>(self->cells_.size());
      auto finish = [self, remaining, done] {
        if (--*remaining > 0) return;
        boost::asio::post(self->strand_, [self, done] {
          self->top_->detach(self->topic_);
          self->cells_.clear();
          done();
        });
      };
      if (self->cells_.empty()) {
        ++*remaining;
        finish();
        return;
      }
      for (auto& c : self->cells_) c->kill(finish);
    };
    self->drain_timer_ = std::make_unique<boost::asio::steady_timer>(self->strand_, timeout);
    self->drain_timer_->async_wait([self](boost::system::error_code ec) {
      if (ec || !self->drained_) return;
      logger("host.router")->warn("{}: {} message(s) still in flight after the shutdown timeout",
                                  self->spec_.addr().str(), self->ledger_.total_in_flight());
      auto fn = std::move(self->drained_);
      self->drained_ = nullptr;
      fn();
    });
    self->check_drained();
  });
}

void router::check_drained() {
  if (!stopping_ || !drained_ || ledger_.total_in_flight() > 0) return;
  if (drain_timer_) drain_timer_->cancel();
  auto fn = std::move(drained_);
  drained_ = nullptr;
  fn();
}

void router::describe(std::function<void(nlohmann::json)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] {
    nlohmann::json j = to_json(self->spec_);  // with the rate in force now
    j["pluginMd5"] = self->plugin_ ? self->plugin_->object().md5() : "";
    nlohmann::json workers = nlohmann::json::array();
    for (auto& w : self->ledger_.snapshot()) {
      nlohmann::json entry = {{"id", w.id},
                              {"path", w.path},
                              {"inFlight", w.in_flight},
                              {"done", self->done_per_worker_[w.index]},
                              {"state", self->worker_state(w.index)}};
      if (w.index < self->cell_errors_.size() && !self->cell_errors_[w.index].empty())
        entry["error"] = self->cell_errors_[w.index];
      workers.push_back(std::move(entry));
    }
    j["workers"] = workers;
    j["poolState"] = self->state_;
    if (self->spec_.hot_deployment) {
      nlohmann::json plugin = {{"state", self->hot_.state}, {"swaps", self->hot_.swaps},
                               {"lastSwapPauseMs", self->hot_.last_pause_ms}};
      if (!self->hot_.error.empty()) {
        plugin["error"] = self->hot_.error;
        plugin["refusedMd5"] = self->hot_.refused_md5;
      }
      if (!self->hot_.fetch_error.empty()) plugin["fetchError"] = self->hot_.fetch_error;
      j["hotDeploy"] = plugin;
    }
    if (!self->last_error_.empty()) j["lastError"] = self->last_error_;
    auto paused_for = std::chrono::duration_cast<std::chrono::milliseconds>(self->gate_->paused_until() -
                                                                            std::chrono::steady_clock::now());
    j["governance"] = {{"pausedForMs", std::max<long long>(0, paused_for.count())},
                       {"lastPauseReason", self->pause_reason_},
                       {"rateLimited", self->stats_.rate_limited},
                       {"retries", self->stats_.retries},
                       {"deadLettered", self->stats_.dead_lettered},
                       {"pauses", self->stats_.pauses},
                       {"remotePauses", self->stats_.remote_pauses}};
    if (self->subs_.enabled()) {
      nlohmann::json subs = nlohmann::json::object();
      auto entry = [&](const std::string& key) {
        auto held = self->sub_waiting_.find(key);
        subs[key] = {{"inFlight", self->subs_.in_flight(key)},
                     {"held", held == self->sub_waiting_.end() ? 0 : held->second.size()},
                     {"capacity", self->subs_.capacity(key)}};
      };
      for (auto& [key, cap] : self->spec_.sub_pools.capacity) entry(key);
      for (auto& [key, held] : self->sub_waiting_) entry(key);
      for (auto& [id, d] : self->deliveries_) if (!subs.contains(d.sub_key)) entry(d.sub_key);
      j["subPoolState"] = subs;
    }
    if (first_reply_wins(self->spec_.router)) {
      auto race = self->race_.snapshot();
      j["firstReply"] = {{"answered", race.answered}, {"dropped", race.dropped}, {"copies", race.copies},
                         {"chopped", race.chopped}};
    }
    if (self->spec_.scale.enabled()) {
      j["workersPaths"] = self->deployed_paths_;
      j["workersCount"] = self->active_workers();
      j["scaling"] = self->describe_scaling();
    }
    j["stats"] = {{"delivered", self->stats_.delivered},
                  {"done", self->stats_.done},
                  {"failed", self->stats_.failed},
                  {"restarts", self->stats_.restarts},
                  {"replies", self->stats_.replies},
                  {"repliesDropped", self->stats_.replies_dropped},
                  {"redelivered", self->stats_.redelivered},
                  {"acked", self->stats_.acked},
                  {"sent", self->sent_.load(std::memory_order_relaxed)}};
    fn(std::move(j));
  });
}

}  // namespace dde::host
