#pragma once
// Canary hot deployment, as a component of a router: a new version first replaces the old one on the
// canary's share of the local slots; once its window passed and enough messages went to it, the
// canary_judge's verdict either swaps the remaining slots too (promote) or swaps the canary's slots
// back to the old version (roll back), which the plugin source then refuses until the file changes.
// Owns the trial (its judge, version, slots, window timer) and its outcome; the pool swaps the slots
// through canary_pool. Every message that ends on a worker counts under its version's md5
// (version_meter). Runs on the router's strand with the router's clock.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "canary_judge.hpp"
#include "clock.hpp"
#include "dde/core/metrics.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/result.hpp"
#include "runtime.hpp"

namespace dde::host {

/// dde_host_version_messages_total{pool, md5, result}: messages that ended on a worker, per version.
class version_meter {
 public:
  struct series {
    metric_cell* handled;
    metric_cell* failed;
  };
  explicit version_meter(std::string pool) : pool_(std::move(pool)) {}
  /// The series of `md5` ("remote": remote workers, whose md5 is not known here), created at 0.
  series* of(const std::string& md5);
  /// The version local workers run now.
  void running(const std::string& md5) { running_ = of(md5); }
  series* running() const { return running_; }
  /// The pool has remote workers.
  void with_remote() { remote_ = of("remote"); }
  series* remote() const { return remote_; }
  static void count(series* s, bool failed) {
    if (s) (failed ? s->failed : s->handled)->add();
  }

 private:
  std::string pool_;
  std::unordered_map<std::string, series> series_;
  series* running_ = nullptr;
  series* remote_ = nullptr;
};

/// What a canary needs of its pool.
class canary_pool {
 public:
  virtual ~canary_pool() = default;
  enum class step { try_it, promote, roll_back };
  /// Swaps the slots in `only` to `plugin`; once done the pool calls the canary's started() (try_it)
  /// or ended() (promote, roll_back). An error changes nothing.
  virtual result<bool> swap_slots(std::shared_ptr<worker_plugin> plugin, step s, std::vector<bool> only) = 0;
  /// Not in the middle of a swap or a restart, and not stopping.
  virtual bool may_judge() const = 0;
  /// The version the other slots run.
  virtual std::shared_ptr<worker_plugin> running() const = 0;
  /// The plugin source: the canary's trial began; its version is refused until its file changes.
  virtual void trial_began() = 0;
  virtual void refuse(const std::string& md5, const std::string& why) = 0;
  /// Runs `fn` on the router's strand, later, unless the pool is gone.
  virtual void later(std::function<void()> fn) = 0;
};

class canary {
 public:
  canary(host::clock& clock, const strand_type& strand, const pool_spec& spec, version_meter& versions,
         canary_pool& pool);

  bool enabled() const { return spec_.enabled(); }
  /// From begin() to the end of its last swap.
  bool trying() const { return plugin_ != nullptr; }
  /// Its slots run the new version and it is being judged.
  bool judging() const { return judge_ != nullptr; }
  /// Slot `index` runs the canary's version (from the canary's start to its end).
  bool on(std::size_t index) const { return judge_ && chosen(index); }
  /// Slot `index` is one of the canary's (from begin() on, its swap perhaps still under way).
  bool chosen(std::size_t index) const { return index < slots_.size() && slots_[index]; }
  const std::shared_ptr<worker_plugin>& plugin() const { return plugin_; }
  version_meter::series* series() const { return series_; }

  /// Tries `plugin` on a share of `eligible` (local slots not killed or parked) of the pool's `slots`.
  /// None eligible: false, and the pool swaps everything as without a canary.
  result<bool> begin(std::shared_ptr<worker_plugin> plugin, const std::vector<std::size_t>& eligible,
                     std::size_t slots);
  /// The canary's slots run the new version now: its window starts.
  void started();
  /// Judges it (posted, so never in the middle of a message's end); promotes or rolls back.
  void judge();
  /// Its last swap is done: it took the whole pool (`promoted`) or left it. `old_md5`: what ran before.
  void ended(bool promoted, const std::string& old_md5);
  /// A message ended on local slot `index` (`on` it or not), the pool not swapping.
  void count(bool on_canary, bool failed);
  void stop();
  /// Why RESTART or KILL waits meanwhile.
  std::string busy_text() const;
  /// The trial under way: the judge's figures, md5 and window (the pool adds state and workers).
  nlohmann::json describe() const;
  /// The last canary's outcome (null: none yet).
  const nlohmann::json& last() const { return last_; }

 private:
  host::clock& clock_;
  strand_type strand_;
  canary_spec spec_;
  std::string name_;  ///< the pool, for logs
  version_meter& versions_;
  canary_pool& pool_;
  std::unique_ptr<canary_judge> judge_;    ///< null: not being judged
  std::shared_ptr<worker_plugin> plugin_;  ///< the version it tries
  std::vector<bool> slots_;                ///< the slots that run it
  version_meter::series* series_ = nullptr;
  std::unique_ptr<timer> window_;
  std::string ended_;  ///< why it ended (the verdict), while its last swap runs
  nlohmann::json last_;
  metric_cell* promoted_ = nullptr;  ///< dde_host_canaries_total{pool, outcome}
  metric_cell* rolled_back_ = nullptr;
};

}  // namespace dde::host
