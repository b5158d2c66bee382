// Autoscaling by queue depth: every `scale.sampleMs` the router asks the MQS how many messages wait
// in its queue (a passive declare at the broker), and the scale policy says how many workers the pool
// should have. It grows by reviving parked slots, then by adding local workers; it shrinks by parking
// idle ones (the KILL path: the slot closes, finishes what it holds, before_kill runs).
#include <algorithm>

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/runtime/load_failures.hpp"
#include "host/router.hpp"

namespace dde::host {

namespace {
constexpr std::size_t changes_kept = 50;
// An MQS that never answers (an older one ignores `depth`) does not stop the sampling.
constexpr auto depth_answer_timeout = std::chrono::seconds(10);
}  // namespace

std::size_t router::active_workers() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!kill_requested(i)) ++n;
  return n;
}

void router::watch_scale() {
  if (stopping_) return;
  if (!scaling_.sampler) {
    scaling_.sampler = clock_->make_timer(strand_);
    scaler_.changed(clock_->now());
    scaling_.peak = active_workers();
  }
  scaling_.sampler->after(spec_.scale.sample, [self = shared_from_this()] {
    if (self->stopping_) return;
    auto now = self->clock_->now();
    if (!self->scaling_.asking || now - self->scaling_.asked_at > depth_answer_timeout) {
      self->scaling_.asking = true;
      self->scaling_.asked_at = now;
      self->top_->queue_depth(self->topic_, [weak = self->weak_from_this()](std::uint64_t messages, std::uint64_t,
                                                                           std::string error) {
        auto r = weak.lock();
        if (!r) return;
        boost::asio::post(r->strand_, [r, messages, error = std::move(error)] { r->on_depth(messages, error); });
      });
    }
    self->watch_scale();
  });
}

void router::on_depth(std::uint64_t backlog, const std::string& error) {
  scaling_.asking = false;
  if (stopping_) return;
  if (error != scaling_.error) {
    if (error.empty())
      logger("host.router")->info("{}: queue depth can be read again", spec_.addr().str());
    else
      logger("host.router")->warn("{}: cannot read the queue depth for autoscaling: {}", spec_.addr().str(), error);
    scaling_.error = error;
  }
  if (!error.empty()) return;
  scaling_.backlog = backlog;
  // Not while the pool swaps plugins or restarts: its slots are changing already.
  if (swap_busy()) return;
  std::size_t active = active_workers(), idle = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (!kill_requested(i) && ledger_.alive(i) && ledger_.in_flight(i) == 0) ++idle;
  auto change = scaler_.sample(clock_->now(), backlog, active, idle);
  if (change && change->to != active) scale_to(change->to, change->reason);
}

bool router::add_local_worker(std::size_t index) {
  if (!plugin_) return false;
  bool fresh_slot = index == slots_.size();
  if (fresh_slot) spec_.workers_paths.push_back("localhost");
  auto c = make_cell(index, plugin_);
  auto made = c->create();
  if (!made) {
    if (fresh_slot) spec_.workers_paths.pop_back();
    logger("host.router")->error("{}: cannot add a worker: {}", spec_.addr().str(), made.error());
    scaling_.error = "cannot add a worker: " + made.error();
    count_plugin_load_failure(topic_, made.code<plugin_failure>());
    return false;
  }
  if (fresh_slot) {
    ledger_.add_worker(c->id(), "localhost");
    slots_.push_back(slot{c, {}, kill_phase::none, 0, false});
  } else {
    slots_[index] = slot{c, {}, kill_phase::none, slots_[index].done, false};
    ledger_.set_alive(index, true, c->id());
    ledger_.set_open(index, true);
  }
  guard_.renew(index, clock_->now());
  c->start();
  return true;
}

void router::scale_to(std::size_t to, const std::string& reason) {
  std::size_t from = active_workers();
  if (to > from) {
    // Parked slots whose instance is gone come back first; then new slots.
    std::size_t want = to - from;
    for (std::size_t i = 0; i < slots_.size() && want > 0; ++i)
      if (parked(i) && slots_[i].kill == kill_phase::killed && add_local_worker(i)) --want;
    while (want > 0 && add_local_worker(slots_.size())) --want;
  } else {
    // The idle ones go, newest slots first.
    std::size_t drop = from - to;
    for (std::size_t i = slots_.size(); i-- > 0 && drop > 0;) {
      if (kill_requested(i) || !ledger_.alive(i) || ledger_.in_flight(i) > 0) continue;
      slots_[i].parked = true;
      begin_kill(i);
      --drop;
    }
  }
  std::size_t now_active = active_workers();
  if (now_active == from) return;
  scaler_.changed(clock_->now());
  ++(now_active > from ? scaling_.ups : scaling_.downs);
  scaling_.peak = std::max(scaling_.peak, now_active);
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
  scaling_.changes.push_back({{"at", at.count()}, {"from", from}, {"to", now_active}, {"reason", reason}});
  if (scaling_.changes.size() > changes_kept) scaling_.changes.pop_front();
  logger("host.router")->info("{}: autoscaling {} -> {} worker(s): {}", spec_.addr().str(), from, now_active, reason);
  flush_waiting();
  request_credit();
}

nlohmann::json router::describe_scaling() const {
  nlohmann::json j = {{"workers", active_workers()},
                      {"backlog", scaling_.backlog},
                      {"peak", scaling_.peak},
                      {"scaleUps", scaling_.ups},
                      {"scaleDowns", scaling_.downs},
                      {"changes", scaling_.changes}};
  if (!scaling_.error.empty()) j["error"] = scaling_.error;
  return j;
}

}  // namespace dde::host
