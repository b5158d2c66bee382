#pragma once
// Hot deployment of a pool (thesis 3.4.3) and RESTART (thesis 3.4.2): the version its local workers
// run, the plugin source that polls for a new one, the canary that may try it on some workers first,
// and the swap itself: the pool holds messages, lets those in flight finish, stops the old instances
// (before_kill runs), then starts the new ones. RESTART is the same swap with the running version; a
// canary's steps are swaps of some of the slots. The pool's slots are reached through swap_host.
// Runs on the router's strand with the router's clock.

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "canary.hpp"
#include "clock.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/result.hpp"
#include "plugin_source.hpp"
#include "runtime.hpp"

namespace dde::host {

/// What a swap does to the pool's worker slots (the router implements it).
class swap_host {
 public:
  virtual ~swap_host() = default;
  virtual std::size_t slot_count() const = 0;
  /// The id of slot `index`'s instance (for describe).
  virtual std::string worker_id(std::size_t index) const = 0;
  /// Slot `index` takes a new instance in a swap: it is local and not killed, or it was killed but
  /// not parked and the swap is a RESTART (`revive_killed`).
  virtual bool swaps(std::size_t index, bool revive_killed) const = 0;
  /// A local worker cell or a proxy for slot `index`, made (not created, not started).
  virtual std::shared_ptr<cell> make_cell(std::size_t index,
                                          const std::shared_ptr<worker_plugin>& plugin) = 0;
  /// Stops slot `index`'s instance (before_kill runs); `gone` then runs on the strand.
  virtual void kill_instance(std::size_t index, std::function<void()> gone) = 0;
  /// Slot `index` runs `fresh` from now on: started, open, alive (a killed slot revived).
  virtual void install(std::size_t index, std::shared_ptr<cell> fresh) = 0;
  /// `true`: no message starts (a swap is under way); `false`: held messages go out, credit is asked.
  virtual void hold_messages(bool hold) = 0;
  virtual std::size_t in_flight() const = 0;
  /// The pool is stopping (shut down, or stopped by supervision): no new version, no verdict.
  virtual bool stopping() const = 0;
  /// Every worker is being replaced after an escalation (supervision's restart of the pool).
  virtual bool restarting() const = 0;
  /// A RESTART swapped every worker: the pool counts a restart.
  virtual void restarted() = 0;
  /// Runs `fn` on the strand, later, unless the pool is gone.
  virtual void later(std::function<void()> fn) = 0;
};

class hot_swap : private swap_target, private canary_pool {
 public:
  hot_swap(host::clock& clock, const strand_type& strand, const pool_spec& spec, swap_host& pool,
           plugin_source::on_strand bind);

  /// Where plugin events go and where copies of each version that worked are kept (plugin_source).
  void set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache) {
    source_.set_events(std::move(events), std::move(plugin_cache));
  }
  void set_fetch_options(fetch_options options) { source_.set_fetch_options(std::move(options)); }
  void prepare(std::function<void(result<bool>)> ready) { source_.prepare(std::move(ready)); }
  /// Loads the version to start with when a worker runs here (`local`); counts remote workers apart.
  result<bool> load(bool local, std::size_t remote_workers);
  /// The pool started after the activator saw a version crash it: that version is refused.
  void start();
  /// With hot deployment and a local version, polls the plugin source (again and again).
  void poll();
  /// The pool stops for good: no poll, no download, no canary.
  void stop();
  /// Supervision stopped the pool (`halt`) or it starts again (`resume`: RESTART of a stopped pool).
  void halt() { source_.stop(); }
  void resume();

  /// The version local workers run (null: remote workers only).
  const std::shared_ptr<worker_plugin>& plugin() const { return plugin_; }
  /// What slot `index` runs: the canary's version on a canary slot, else the pool's.
  const std::shared_ptr<worker_plugin>& plugin_for(std::size_t index) const {
    return canary_.on(index) ? canary_.plugin() : plugin_;
  }
  std::string md5() const { return plugin_ ? plugin_->object().md5() : ""; }
  bool swapping() const { return swap_.swapping; }
  /// A swap, a restart or a canary is under way: no KILL, RESTART or new version now.
  bool busy() const { return swap_.swapping || pool_.restarting() || canary_.judging(); }
  /// Why busy() refuses: the canary's trial, or "pool P is <`pool_is`>".
  std::string why_busy(std::string_view pool_is) const;
  bool canary_on(std::size_t index) const { return canary_.on(index); }

  /// RESTART (thesis 3.4.2): fresh instances of every local worker (killed ones too, parked ones not).
  result<bool> restart();
  /// A message (or copy) ended on slot `index` as its version handled or failed it.
  void handled(std::size_t index, bool failed);
  /// Nothing is in flight any more: a swap that waited for that goes on.
  void drained() {
    if (swap_.swapping && !swap_.next_cells.empty()) finish_swap();
  }
  /// "hotDeploy" of describe, with the canary's trial and its last verdict.
  nlohmann::json describe() const;

 private:
  /// What a swap does: a new version everywhere, a RESTART, or a step of a canary.
  enum class kind { version, restart, canary_in, promote, roll_back };
  struct swap_state {
    bool swapping = false;
    bool killing = false;  ///< the old instances are being stopped
    kind what = kind::version;
    clock::time_point started;
    std::shared_ptr<worker_plugin> next_plugin;
    std::vector<std::shared_ptr<cell>> next_cells;
  };

  /// Builds instances of `plugin` and starts swapping to them; an error (nothing changed) or success.
  /// `only` (when not empty): the slots to swap, the others keep their instances.
  result<bool> begin(std::shared_ptr<worker_plugin> plugin, kind what, bool revive_killed = false,
                     std::vector<bool> only = {});
  void finish_swap();
  void swap_in();
  nlohmann::json describe_canary() const;
  // swap_target (the plugin source offers a new version) and canary_pool (the canary's steps).
  bool swap_busy() const override { return busy(); }
  std::shared_ptr<worker_plugin> running() const override { return plugin_; }
  result<bool> swap_to(std::shared_ptr<worker_plugin> plugin) override;
  result<bool> swap_slots(std::shared_ptr<worker_plugin> plugin, canary_pool::step s,
                          std::vector<bool> only) override;
  bool may_judge() const override { return !swap_.swapping && !pool_.restarting() && !pool_.stopping(); }
  void trial_began() override { source_.canary_started(); }
  void refuse(const std::string& md5, const std::string& why) override { source_.rolled_back(md5, why); }
  void later(std::function<void()> fn) override { pool_.later(std::move(fn)); }

  host::clock& clock_;
  strand_type strand_;
  const pool_spec& spec_;
  swap_host& pool_;
  std::shared_ptr<worker_plugin> plugin_;
  plugin_source source_;
  std::unique_ptr<timer> timer_;  ///< the plugin source's polls
  swap_state swap_;
  version_meter versions_;
  canary canary_;
};

}  // namespace dde::host
