#include "autoscaler.hpp"

#include <algorithm>

#include "dde/log.hpp"

namespace dde::host {
namespace {
constexpr std::size_t changes_kept = 50;
// An MQS that never answers (an older one ignores `depth`) does not stop the sampling.
constexpr auto depth_answer_timeout = std::chrono::seconds(10);
}  // namespace

autoscaler::autoscaler(host::clock& clock, const strand_type& strand, const pool_spec& spec,
                       scaling_target& pool)
    : clock_(clock),
      strand_(strand),
      name_(spec.addr().str()),
      isolate_(spec.isolate),
      pool_(pool),
      policy_(spec.scale),
      deployed_paths_(spec.workers_paths) {}

void autoscaler::start() {
  if (!enabled()) return;
  running_ = true;
  if (!sampler_) {
    sampler_ = clock_.make_timer(strand_);
    policy_.changed(clock_.now());
    tally_.peak = pool_.active_workers();
  }
  // The timer is this object's: its call never outlives it.
  sampler_->after(policy_.spec().sample, [this] { sample(); });
}

void autoscaler::stop() {
  running_ = false;
  if (sampler_) sampler_->cancel();
}

void autoscaler::sample() {
  if (!running_) return;
  auto now = clock_.now();
  if (!asking_ || now - asked_at_ > depth_answer_timeout) {
    asking_ = true;
    asked_at_ = now;
    pool_.ask_depth([this](std::uint64_t backlog, std::string error) { on_depth(backlog, error); });
  }
  start();
}

void autoscaler::on_depth(std::uint64_t backlog, const std::string& error) {
  asking_ = false;
  if (!running_) return;
  if (error != error_) {
    if (error.empty())
      logger("host.router")->info("{}: queue depth can be read again", name_);
    else
      logger("host.router")->warn("{}: cannot read the queue depth for autoscaling: {}", name_, error);
    error_ = error;
  }
  if (!error.empty()) return;
  backlog_ = backlog;
  if (pool_.slots_changing()) return;
  const std::size_t from = pool_.active_workers();
  auto change = policy_.sample(clock_.now(), backlog, from, pool_.idle_workers());
  if (!change || change->to == from) return;
  if (change->to > from)
    pool_.grow(change->to - from);
  else
    pool_.shrink(from - change->to);
  const std::size_t now_active = pool_.active_workers();
  if (now_active == from) return;
  policy_.changed(clock_.now());
  ++(now_active > from ? tally_.ups : tally_.downs);
  tally_.peak = std::max(tally_.peak, now_active);
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.wall_now().time_since_epoch());
  tally_.changes.push_back(
      {{"at", at.count()}, {"from", from}, {"to", now_active}, {"reason", change->reason}});
  if (tally_.changes.size() > changes_kept) tally_.changes.pop_front();
  logger("host.router")
      ->info("{}: autoscaling {} -> {} worker(s): {}", name_, from, now_active, change->reason);
  pool_.scaled();
  // What the node runs changed by the pool's own decision: the registry describes the node again.
  if (events_) events_({{"event", "poolScaled"}, {"isolateName", isolate_}, {"workers", now_active}});
}

void autoscaler::describe(nlohmann::json& pool, std::size_t active) const {
  pool["workersPaths"] = deployed_paths_;
  pool["workersCount"] = active;
  nlohmann::json j = {{"workers", active},      {"backlog", backlog_},        {"peak", tally_.peak},
                      {"scaleUps", tally_.ups}, {"scaleDowns", tally_.downs}, {"changes", tally_.changes}};
  if (!error_.empty()) j["error"] = error_;
  pool["scaling"] = std::move(j);
}

}  // namespace dde::host
