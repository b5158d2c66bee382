// Hot deployment and RESTART on the worker slots: the plugin source polls for a new version and
// offers it; the pool stops pulling, lets in-flight messages finish, stops the old instances
// (before_kill runs), then starts the new ones. RESTART is the same swap with the running version; a
// canary's steps (router_canary.cpp) are swaps of some of the slots.
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "host/router.hpp"

namespace dde::host {

void router::watch_plugin() {
  if (stopping_) return;
  if (!plugin_timer_) plugin_timer_ = clock_->make_timer(strand_);
  plugin_timer_->after(spec_.hot_interval, [self = shared_from_this()] {
    if (self->stopping_) return;
    self->source_.check();
    self->watch_plugin();
  });
}

result<bool> router::begin_swap(std::shared_ptr<worker_plugin> plugin, swap_kind kind, bool revive_killed,
                                std::vector<bool> only) {
  std::vector<std::shared_ptr<cell>> fresh(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (spec_.workers_paths[i] != "localhost") continue;  // a remote worker loads its own copy when respawned
    if (!only.empty() && (i >= only.size() || !only[i])) continue;
    if (kill_requested(i) && (!revive_killed || parked(i))) continue;  // parked slots stay parked
    auto c = make_cell(i, plugin);
    auto made = c->create();
    if (!made) return made;
    fresh[i] = std::move(c);
  }
  // RESTART (thesis 3.4.2): stop pulling, let in-flight messages finish, then swap.
  swap_.swapping = true;
  swap_.kind = kind;
  swap_.started = clock_->now();
  swap_.next_plugin = std::move(plugin);
  swap_.next_cells = std::move(fresh);
  ledger_.set_paused(true);
  if (ledger_.total_in_flight() == 0) finish_swap();
  return true;
}

void router::finish_swap() {
  if (swap_.killing) return;
  swap_.killing = true;
  auto remaining = std::make_shared<std::size_t>(0);
  for (auto& next : swap_.next_cells)
    if (next) ++*remaining;
  if (*remaining == 0) return swap_in();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!swap_.next_cells[i]) continue;
    // before_kill runs on the old instance; the new one starts only after every old one is gone.
    slots_[i].worker->kill([self = shared_from_this(), remaining] {
      boost::asio::post(self->strand_, [self, remaining] {
        if (--*remaining == 0) self->swap_in();
      });
    });
  }
}

void router::swap_in() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!swap_.next_cells[i]) continue;
    auto& s = slots_[i];
    s.worker = std::move(swap_.next_cells[i]);
    ledger_.set_alive(i, true, s.worker->id());
    ledger_.set_open(i, true);
    s.kill = kill_phase::none;  // a RESTART revives killed workers
    watch_.renew(i);            // a fresh instance: quiet from now, as a started or respawned one
    s.worker->start();
  }
  auto next = std::move(swap_.next_plugin);
  swap_.next_cells.clear();
  swap_.swapping = false;
  swap_.killing = false;
  auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(clock_->now() - swap_.started);
  switch (swap_.kind) {
    case swap_kind::restart:
      ++stats_.restarts;
      source_.restarted(pause);
      break;
    case swap_kind::canary_in:
      canary_.started();  // the old version keeps the other slots
      break;
    case swap_kind::roll_back: canary_.ended(false, plugin_ ? plugin_->object().md5() : ""); break;
    case swap_kind::promote: canary_.ended(true, plugin_ ? plugin_->object().md5() : ""); [[fallthrough]];
    case swap_kind::version:
      plugin_ = std::move(next);
      versions_.running(plugin_->object().md5());
      source_.swapped(pause);
      break;
  }
  if (swap_.kind != swap_kind::canary_in && swap_.kind != swap_kind::roll_back)
    logger("host.router")
        ->info("{}: now running plugin md5 {} ({}, paused {} ms)", spec_.addr().str(),
               plugin_->object().md5(), swap_.kind == swap_kind::restart ? "restart" : "new version",
               pause.count());
  ledger_.set_paused(false);
  flush_waiting();
  request_credit();
}

}  // namespace dde::host
