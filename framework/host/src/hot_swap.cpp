// Hot deployment and RESTART on the worker slots, and the pool's side of a canary (host/canary
// judges): the swap holds the pool's messages, waits for those in flight, stops the old instances and
// starts the new ones; every message that ends on a worker counts under its version's md5.
#include "hot_swap.hpp"

#include "dde/log.hpp"

namespace dde::host {

hot_swap::hot_swap(host::clock& clock, const strand_type& strand, const pool_spec& spec, swap_host& pool,
                   plugin_source::on_strand bind)
    : clock_(clock),
      strand_(strand),
      spec_(spec),
      pool_(pool),
      source_(spec, *this, std::move(bind)),
      versions_(spec.addr().topic()),
      canary_(clock, strand, spec, versions_, *this) {}

result<bool> hot_swap::load(bool local, std::size_t remote_workers) {
  if (local) {
    // Remote workers load the plugin on their node; a local one must load here.
    auto loaded = source_.load_first();
    if (!loaded) return result<bool>::failure_of(loaded);
    plugin_ = loaded.value();
    versions_.running(plugin_->object().md5());
  }
  if (remote_workers > 0) versions_.with_remote();
  return true;
}

void hot_swap::start() {
  // After a new version crashed the isolate system, the activator has it start from the last good one.
  if (!spec_.crashed_md5.empty()) source_.refuse_crashed();
}

void hot_swap::stop() {
  source_.stop();
  if (timer_) timer_->cancel();
  canary_.stop();
}

void hot_swap::resume() {
  source_.resume();
  poll();
}

void hot_swap::poll() {
  if (!spec_.hot_deployment || !plugin_ || pool_.stopping()) return;
  if (!timer_) timer_ = clock_.make_timer(strand_);
  timer_->after(spec_.hot_interval, [this] {
    if (pool_.stopping()) return;
    source_.check();
    poll();
  });
}

std::string hot_swap::why_busy(std::string_view pool_is) const {
  if (canary_.judging()) return canary_.busy_text();
  return "pool " + spec_.addr().str() + " is " + std::string(pool_is);
}

result<bool> hot_swap::restart() {
  if (busy()) return result<bool>::failure(why_busy("already restarting"));
  if (!plugin_)
    return result<bool>::failure("pool " + spec_.addr().str() + " has no local workers to restart");
  logger("host.router")->info("{}: RESTART of every worker", spec_.addr().str());
  return begin(plugin_, kind::restart, true);
}

void hot_swap::handled(std::size_t index, bool failed) {
  bool local = spec_.workers_paths[index] == "localhost";  // remote workers' md5 is not known here
  if (!failed && !swap_.swapping) source_.proven();
  bool canary = canary_.on(index);
  version_meter::count(!local ? versions_.remote() : canary ? canary_.series() : versions_.running(), failed);
  if (local && !swap_.swapping) canary_.count(canary, failed);
}

result<bool> hot_swap::swap_to(std::shared_ptr<worker_plugin> plugin) {
  if (!canary_.enabled()) return begin(std::move(plugin), kind::version);
  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < pool_.slot_count(); ++i)
    if (pool_.swaps(i, false)) eligible.push_back(i);
  auto begun = canary_.begin(plugin, eligible, pool_.slot_count());
  // Every local worker killed or parked: nothing to try it on, it replaces the old version as without a
  // canary.
  if (begun && !begun.value()) return begin(std::move(plugin), kind::version);
  return begun;
}

result<bool> hot_swap::swap_slots(std::shared_ptr<worker_plugin> plugin, canary_pool::step s,
                                  std::vector<bool> only) {
  auto what = s == canary_pool::step::try_it    ? kind::canary_in
              : s == canary_pool::step::promote ? kind::promote
                                                : kind::roll_back;
  return begin(std::move(plugin), what, false, std::move(only));
}

result<bool> hot_swap::begin(std::shared_ptr<worker_plugin> plugin, kind what, bool revive_killed,
                             std::vector<bool> only) {
  std::vector<std::shared_ptr<cell>> fresh(pool_.slot_count());
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    // A remote worker loads its own copy when respawned; parked slots stay parked.
    if (!pool_.swaps(i, revive_killed)) continue;
    if (!only.empty() && (i >= only.size() || !only[i])) continue;
    auto c = pool_.make_cell(i, plugin);
    auto made = c->create();
    if (!made) return made;
    fresh[i] = std::move(c);
  }
  // RESTART (thesis 3.4.2): stop pulling, let in-flight messages finish, then swap.
  swap_.swapping = true;
  swap_.what = what;
  swap_.started = clock_.now();
  swap_.next_plugin = std::move(plugin);
  swap_.next_cells = std::move(fresh);
  pool_.hold_messages(true);
  if (pool_.in_flight() == 0) finish_swap();
  return true;
}

void hot_swap::finish_swap() {
  if (swap_.killing) return;
  swap_.killing = true;
  auto remaining = std::make_shared<std::size_t>(0);
  for (auto& next : swap_.next_cells)
    if (next) ++*remaining;
  if (*remaining == 0) return swap_in();
  // before_kill runs on the old instance; the new one starts only after every old one is gone.
  for (std::size_t i = 0; i < swap_.next_cells.size(); ++i)
    if (swap_.next_cells[i])
      pool_.kill_instance(i, [this, remaining] {
        if (--*remaining == 0) swap_in();
      });
}

void hot_swap::swap_in() {
  for (std::size_t i = 0; i < swap_.next_cells.size(); ++i)
    if (swap_.next_cells[i]) pool_.install(i, std::move(swap_.next_cells[i]));
  auto next = std::move(swap_.next_plugin);
  swap_.next_cells.clear();
  swap_.swapping = false;
  swap_.killing = false;
  auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - swap_.started);
  switch (swap_.what) {
    case kind::restart:
      pool_.restarted();
      source_.restarted(pause);
      break;
    case kind::canary_in: canary_.started(); break;  // the old version keeps the other slots
    case kind::roll_back: canary_.ended(false, md5()); break;
    case kind::promote: canary_.ended(true, md5()); [[fallthrough]];
    case kind::version:
      plugin_ = std::move(next);
      versions_.running(plugin_->object().md5());
      source_.swapped(pause);
      break;
  }
  if (swap_.what != kind::canary_in && swap_.what != kind::roll_back)
    logger("host.router")
        ->info("{}: now running plugin md5 {} ({}, paused {} ms)", spec_.addr().str(), md5(),
               swap_.what == kind::restart ? "restart" : "new version", pause.count());
  pool_.hold_messages(false);
}

nlohmann::json hot_swap::describe() const {
  auto j = source_.describe();
  if (canary_.trying()) j["canary"] = describe_canary();
  if (!canary_.last().is_null()) j["lastCanary"] = canary_.last();
  return j;
}

nlohmann::json hot_swap::describe_canary() const {
  auto j = canary_.describe();
  const char* state = !canary_.judging()            ? "starting"
                      : !swap_.swapping             ? "running"
                      : swap_.what == kind::promote ? "promoting"
                                                    : "rollingBack";
  j["state"] = state;
  j["oldMd5"] = md5();
  j["workers"] = nlohmann::json::array();
  for (std::size_t i = 0; i < pool_.slot_count(); ++i)
    if (canary_.chosen(i)) j["workers"].push_back(pool_.worker_id(i));
  return j;
}

}  // namespace dde::host
