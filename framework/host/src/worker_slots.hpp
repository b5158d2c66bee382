#pragma once
// A pool's worker slots: each slot's instance (a local worker cell or a proxy), why it is down, where
// it stands in a KILL, how many messages it finished and whether the autoscaler parked it. A slot's
// index is its worker's index in the pool_ledger, whose alive and open flags it keeps in step: a slot
// being killed is closed (it gets nothing more) and drains before its instance stops. Runs on the
// router's strand; the instances' own work happens on theirs.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "routing.hpp"
#include "runtime.hpp"

namespace dde::host {

class worker_slots {
 public:
  explicit worker_slots(pool_ledger& ledger) : ledger_(ledger) {}

  std::size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  cell& worker(std::size_t index) const { return *slots_[index].worker; }

  /// A new slot at the end for `c`, which runs at `path`; a proxy's slot ("localhost" is local) is up
  /// once its remote worker is spawned (up()).
  void add(std::shared_ptr<cell> c, const std::string& path);
  /// Slot `index` (or, when `index` is size(), a new slot) gets the local instance `c`: alive and open,
  /// not killed nor parked; a slot that had one keeps its count of finished messages.
  void place(std::size_t index, std::shared_ptr<cell> c);
  /// Forgets every slot (the pool shut down, or never started).
  void clear() { slots_.clear(); }
  /// Stops every slot's instance (before_kill runs); `gone` runs as each has stopped, on its strand.
  void kill_each(const std::function<void()>& gone) const {
    for (auto& s : slots_) s.worker->kill(gone);
  }

  /// A fresh instance `c` of slot `index`, which runs at `path` (as add()); its error is cleared.
  void renew(std::size_t index, std::shared_ptr<cell> c, const std::string& path);
  /// A RESTART's fresh instance of slot `index`: alive, open, and no longer killed.
  void install(std::size_t index, std::shared_ptr<cell> fresh);
  /// Slot `index` is down: it gets nothing until it is up again; `why` shows in describe.
  void down(std::size_t index, std::string why);
  /// The instance of slot `index` runs (again) as `id`; false, and nothing changes, while it is being
  /// killed.
  bool up(std::size_t index, const std::string& id);
  /// Slot `index` finished a message.
  void count_done(std::size_t index) { ++slots_[index].done; }

  /// KILL: slot `index` closes and drains; drained() says when its instance may stop.
  void begin_kill(std::size_t index);
  /// The instance of a slot being killed that holds nothing any more: it is to be stopped now (the
  /// slot waits for stopped()). Null while it still holds messages, or when it is not being killed.
  std::shared_ptr<cell> drained(std::size_t index);
  /// The instance `c` of slot `index` has stopped: true when the slot was waiting for it (it is killed
  /// now); false when a RESTART put a fresh instance there meanwhile, or the slots were cleared.
  bool stopped(std::size_t index, const std::shared_ptr<cell>& c);
  /// A slot being killed whose instance cannot stop on its own (stuck, or replaced by the pool's
  /// restart): killed now, and down.
  void killed_now(std::size_t index);
  /// A pool stopped by supervision starts again: slot `index` opens and is no longer killed.
  void reopen(std::size_t index);

  bool kill_requested(std::size_t index) const {
    return index < slots_.size() && slots_[index].kill != kill_phase::none;
  }
  bool parked(std::size_t index) const { return index < slots_.size() && slots_[index].parked; }
  /// Slots neither killed nor parked.
  std::size_t active() const;
  /// Active slots that are up and hold nothing.
  std::size_t idle() const;
  /// Parks up to `n` idle slots, newest first, and begins their KILL; returns them.
  std::vector<std::size_t> park_idle(std::size_t n);
  /// Parked slots whose instance is gone: the first to come back when the pool grows.
  std::vector<std::size_t> parked_and_gone() const;

  /// "running", "down", "killing", "killed" or "parked".
  std::string state(std::size_t index) const;
  /// describe's "workers": id, path, in flight (now and at most), done, state, error, canary.
  nlohmann::json describe(const std::function<bool(std::size_t)>& canary) const;

 private:
  enum class kill_phase { none, draining, stopping, killed };
  struct slot {
    std::shared_ptr<cell> worker;  ///< its instance
    std::string error;             ///< why it is down, for describe
    kill_phase kill = kill_phase::none;
    std::uint64_t done = 0;  ///< messages it finished, for describe
    bool parked = false;     ///< taken out by the autoscaler
  };

  pool_ledger& ledger_;
  std::vector<slot> slots_;
};

}  // namespace dde::host
