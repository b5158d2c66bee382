// Canary hot deployment on the worker slots: a new version first replaces the old one on the canary's
// share of the local slots (a swap of those slots only); once its window passed and enough messages
// went to it, the canary_judge's verdict either swaps the remaining slots too (promote) or swaps the
// canary's slots back to the old version (roll back), which the plugin source then refuses until the
// file changes. Every message that ends on a worker counts under its version's md5.
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "host/router.hpp"

namespace dde::host {

void router::init_version_metrics() {
  if (plugin_) running_series_ = version_metrics(plugin_->object().md5());
  for (auto& path : spec_.workers_paths)
    if (path != "localhost") remote_series_ = version_metrics("remote");
  if (!spec_.canary.enabled()) return;
  auto& metrics = metrics_registry::process();
  auto outcome = [&](const char* what) {
    return &metrics.counter(
        "dde_host_canaries_total",
        "Canary hot deployments that ended, per pool and outcome (promoted, rolled_back).",
        {{"pool", topic_}, {"outcome", what}});
  };
  canary_.promoted = outcome("promoted");
  canary_.rolled_back = outcome("rolled_back");
}

router::version_series* router::version_metrics(const std::string& md5) {
  auto [it, fresh] = version_series_.try_emplace(md5);
  if (fresh) {
    auto& metrics = metrics_registry::process();
    auto series = [&](const char* result) {
      return &metrics.counter(
          "dde_host_version_messages_total",
          "Messages that ended on a worker, per pool, plugin version (md5; \"remote\" for "
          "remote workers) and result (handled, failed).",
          {{"pool", topic_}, {"md5", md5}, {"result", result}});
    };
    it->second = {series("handled"), series("failed")};
  }
  return &it->second;
}

void router::count_version(std::size_t index, bool failed) {
  bool local = spec_.workers_paths[index] == "localhost";
  bool canary = on_canary(index);
  auto* series = !local ? remote_series_ : canary ? canary_.series : running_series_;
  if (series) (failed ? series->failed : series->handled)->add();
  if (!canary_.judge || !local || swap_.swapping) return;
  canary_.judge->count(canary, failed);
  // Past the window, the verdict waits for min_messages: judge again as each canary message ends.
  if (canary && clock_->now() >= canary_.judge->window_end())
    boost::asio::post(strand_, [self = shared_from_this()] { self->judge_canary(); });
}

result<bool> router::swap_to(std::shared_ptr<worker_plugin> plugin) {
  if (!spec_.canary.enabled()) return begin_swap(std::move(plugin), swap_kind::version);
  return begin_canary(std::move(plugin));
}

result<bool> router::begin_canary(std::shared_ptr<worker_plugin> plugin) {
  std::vector<std::size_t> eligible;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (spec_.workers_paths[i] == "localhost" && !kill_requested(i) && !parked(i)) eligible.push_back(i);
  auto share = spec_.canary.share_of(eligible.size());
  // Every local worker killed or parked: nothing to try it on, it replaces the old version as without a
  // canary.
  if (share == 0) return begin_swap(std::move(plugin), swap_kind::version);
  std::vector<bool> chosen(slots_.size(), false);
  for (std::size_t k = 0; k < share; ++k) chosen[eligible[k]] = true;
  canary_.slots = chosen;
  canary_.series = version_metrics(plugin->object().md5());
  canary_.plugin = plugin;
  canary_.ended.clear();
  auto begun = begin_swap(plugin, swap_kind::canary_in, false, std::move(chosen));
  if (!begun) {
    canary_.slots.clear();
    canary_.plugin.reset();
    canary_.series = nullptr;
    return begun;
  }
  logger("host.router")
      ->info(
          "{}: plugin md5 {} starts as a canary on {} of {} worker(s); judged after {} ms and {} message(s)",
          spec_.addr().str(), plugin->object().md5(), share, eligible.size(), spec_.canary.window.count(),
          spec_.canary.min_messages);
  return true;
}

void router::canary_started() {
  version_counts before;
  if (running_series_)
    before = {std::uint64_t(running_series_->handled->value()),
              std::uint64_t(running_series_->failed->value())};
  canary_.judge = std::make_unique<canary_judge>(spec_.canary, clock_->now(), before);
  source_.canary_started();
  if (!canary_.window) canary_.window = clock_->make_timer(strand_);
  canary_.window->after(spec_.canary.window, [self = shared_from_this()] {
    if (!self->stopping_) self->judge_canary();
  });
}

void router::judge_canary() {
  if (!canary_.judge || swap_.swapping || restarting_pool_ || stopping_) return;
  auto verdict = canary_.judge->judge(clock_->now());
  if (verdict == canary_judge::verdict::wait) return;
  canary_.ended = canary_.judge->explain();
  if (verdict == canary_judge::verdict::promote) {
    std::vector<bool> others(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i) others[i] = !on_canary(i);
    auto begun = begin_swap(canary_.plugin, swap_kind::promote, false, std::move(others));
    if (begun) return;
    canary_.ended = "the new version did not start on the other workers: " + begun.error();
  }
  auto begun = begin_swap(plugin_, swap_kind::roll_back, false, canary_.slots);
  if (!begun)  // the old version no longer starts either: the canary keeps its slots, judged again later
    logger("host.router")->error("{}: cannot roll the canary back: {}", spec_.addr().str(), begun.error());
}

void router::end_canary(bool promoted) {
  auto md5 = canary_.plugin->object().md5();
  const auto& judge = *canary_.judge;
  canary_.last = {
      {"md5", md5},
      {"oldMd5", plugin_ ? plugin_->object().md5() : ""},
      {"outcome", promoted ? "promoted" : "rolledBack"},
      {"reason", canary_.ended},
      {"canary", to_json(judge.canary())},
      {"baseline", to_json(judge.baseline())},
      {"at",
       std::chrono::duration_cast<std::chrono::milliseconds>(clock_->wall_now().time_since_epoch()).count()}};
  if (auto* outcome = promoted ? canary_.promoted : canary_.rolled_back) outcome->add();
  if (promoted) {
    logger("host.router")->info("{}: canary md5 {} promoted: {}", spec_.addr().str(), md5, canary_.ended);
  } else {
    // Refused as a version that does not load is: not tried again until the file changes.
    source_.rolled_back(md5, "canary rolled back: " + canary_.ended);
  }
  canary_.judge.reset();
  canary_.plugin.reset();
  canary_.slots.clear();
  canary_.series = nullptr;
  if (canary_.window) canary_.window->cancel();
}

std::string router::busy_text() const {
  return "pool " + spec_.addr().str() + " is trying plugin md5 " +
         (canary_.plugin ? canary_.plugin->object().md5() : std::string("?")) +
         " as a canary (until it is promoted or rolled back)";
}

nlohmann::json router::describe_canary() const {
  nlohmann::json j = canary_.judge ? canary_.judge->describe(clock_->now()) : nlohmann::json::object();
  const char* state = !canary_.judge                     ? "starting"
                      : !swap_.swapping                  ? "running"
                      : swap_.kind == swap_kind::promote ? "promoting"
                                                         : "rollingBack";
  j["state"] = state;
  j["md5"] = canary_.plugin ? canary_.plugin->object().md5() : "";
  j["oldMd5"] = plugin_ ? plugin_->object().md5() : "";
  j["windowMs"] = spec_.canary.window.count();
  auto workers = nlohmann::json::array();
  for (std::size_t i = 0; i < canary_.slots.size() && i < slots_.size(); ++i)
    if (canary_.slots[i]) workers.push_back(slots_[i].worker->id());
  j["workers"] = std::move(workers);
  return j;
}

}  // namespace dde::host
