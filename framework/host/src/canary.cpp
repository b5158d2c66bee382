#include "canary.hpp"

#include "dde/log.hpp"

namespace dde::host {

version_meter::series* version_meter::of(const std::string& md5) {
  auto [it, fresh] = series_.try_emplace(md5);
  if (fresh) {
    auto& metrics = metrics_registry::process();
    auto one = [&](const char* result) {
      return &metrics.counter(
          "dde_host_version_messages_total",
          "Messages that ended on a worker, per pool, plugin version (md5; \"remote\" for "
          "remote workers) and result (handled, failed).",
          {{"pool", pool_}, {"md5", md5}, {"result", result}});
    };
    it->second = {one("handled"), one("failed")};
  }
  return &it->second;
}

canary::canary(host::clock& clock, const strand_type& strand, const pool_spec& spec, version_meter& versions,
               canary_pool& pool)
    : clock_(clock),
      strand_(strand),
      spec_(spec.canary),
      name_(spec.addr().str()),
      versions_(versions),
      pool_(pool) {
  if (!spec_.enabled()) return;
  auto& metrics = metrics_registry::process();
  auto outcome = [&](const char* what) {
    return &metrics.counter(
        "dde_host_canaries_total",
        "Canary hot deployments that ended, per pool and outcome (promoted, rolled_back).",
        {{"pool", spec.addr().topic()}, {"outcome", what}});
  };
  promoted_ = outcome("promoted");
  rolled_back_ = outcome("rolled_back");
}

result<bool> canary::begin(std::shared_ptr<worker_plugin> plugin, const std::vector<std::size_t>& eligible,
                           std::size_t slots) {
  auto share = spec_.share_of(eligible.size());
  if (share == 0) return false;
  std::vector<bool> chosen(slots, false);
  for (std::size_t k = 0; k < share; ++k) chosen[eligible[k]] = true;
  slots_ = chosen;
  series_ = versions_.of(plugin->object().md5());
  plugin_ = plugin;
  ended_.clear();
  auto begun = pool_.swap_slots(plugin, canary_pool::step::try_it, std::move(chosen));
  if (!begun) {
    slots_.clear();
    plugin_.reset();
    series_ = nullptr;
    return begun;
  }
  logger("host.router")
      ->info(
          "{}: plugin md5 {} starts as a canary on {} of {} worker(s); judged after {} ms and {} message(s)",
          name_, plugin->object().md5(), share, eligible.size(), spec_.window.count(), spec_.min_messages);
  return true;
}

void canary::started() {
  version_counts before;
  if (auto* running = versions_.running())
    before = {std::uint64_t(running->handled->value()), std::uint64_t(running->failed->value())};
  judge_ = std::make_unique<canary_judge>(spec_, clock_.now(), before);
  pool_.trial_began();
  if (!window_) window_ = clock_.make_timer(strand_);
  // The timer is this object's: its call never outlives it.
  window_->after(spec_.window, [this] { judge(); });
}

void canary::count(bool on_canary, bool failed) {
  if (!judge_) return;
  judge_->count(on_canary, failed);
  // Past the window, the verdict waits for min_messages: judge again as each canary message ends.
  if (on_canary && clock_.now() >= judge_->window_end()) pool_.later([this] { judge(); });
}

void canary::judge() {
  if (!judge_ || !pool_.may_judge()) return;
  auto verdict = judge_->judge(clock_.now());
  if (verdict == canary_judge::verdict::wait) return;
  ended_ = judge_->explain();
  if (verdict == canary_judge::verdict::promote) {
    std::vector<bool> others(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) others[i] = !slots_[i];
    auto begun = pool_.swap_slots(plugin_, canary_pool::step::promote, std::move(others));
    if (begun) return;
    ended_ = "the new version did not start on the other workers: " + begun.error();
  }
  auto begun = pool_.swap_slots(pool_.running(), canary_pool::step::roll_back, slots_);
  if (!begun)  // the old version no longer starts either: the canary keeps its slots, judged again later
    logger("host.router")->error("{}: cannot roll the canary back: {}", name_, begun.error());
}

void canary::ended(bool promoted, const std::string& old_md5) {
  auto md5 = plugin_->object().md5();
  last_ = {
      {"md5", md5},
      {"oldMd5", old_md5},
      {"outcome", promoted ? "promoted" : "rolledBack"},
      {"reason", ended_},
      {"canary", to_json(judge_->canary())},
      {"baseline", to_json(judge_->baseline())},
      {"at",
       std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall_now().time_since_epoch()).count()}};
  if (auto* outcome = promoted ? promoted_ : rolled_back_) outcome->add();
  if (promoted)
    logger("host.router")->info("{}: canary md5 {} promoted: {}", name_, md5, ended_);
  else  // refused as a version that does not load is: not tried again until the file changes
    pool_.refuse(md5, "canary rolled back: " + ended_);
  judge_.reset();
  plugin_.reset();
  slots_.clear();
  series_ = nullptr;
  if (window_) window_->cancel();
}

void canary::stop() {
  if (window_) window_->cancel();
}

std::string canary::busy_text() const {
  return "pool " + name_ + " is trying plugin md5 " + (plugin_ ? plugin_->object().md5() : std::string("?")) +
         " as a canary (until it is promoted or rolled back)";
}

nlohmann::json canary::describe() const {
  nlohmann::json j = judge_ ? judge_->describe(clock_.now()) : nlohmann::json::object();
  j["md5"] = plugin_ ? plugin_->object().md5() : "";
  j["windowMs"] = spec_.window.count();
  return j;
}

}  // namespace dde::host
