// Ask round trips, in the isolate system that asks: an ask of one of the pool's workers is timed
// from its sending (router::enqueue, on the worker's strand, posts it here) to its reply (deliver_reply)
// or its timeout, per asked pool: dde_host_ask_seconds{pool} and dde_host_ask_timeouts_total{pool}.
#include "host/router.hpp"

namespace dde::host {

router::ask_series& router::ask_metrics(const std::string& pool) {
  auto it = ask_series_.find(pool);
  if (it != ask_series_.end()) return it->second;
  auto& metrics = metrics_registry::process();
  metric_labels l = {{"pool", pool}};
  ask_series series{
      &metrics.histogram("dde_host_ask_seconds",
                         "Round trip of an ask, from its sending to its reply or its timeout (60 s), "
                         "per asked pool, in the isolate system that asks.",
                         latency_buckets(), l),
      &metrics.counter("dde_host_ask_timeouts_total",
                       "Asks without a reply after 60 s, per asked pool, in the isolate system that asks.",
                       l)};
  return ask_series_.emplace(pool, series).first->second;
}

void router::on_ask_sent(const std::string& id, const std::string& pool, clock::time_point at) {
  asks_.sent(id, pool, at);
  ask_metrics(pool);
  if (asks_.over_limit())
    expire_asks();  // memory stays bounded whatever the workers ask
  else if (!ask_timer_armed_)
    arm_ask_timer();
}

void router::on_reply(const std::string& in_reply_to) {
  if (in_reply_to.empty()) return;
  if (auto ended = asks_.answered(in_reply_to, clock_->now()))
    ask_metrics(ended->pool).seconds->observe(ended->seconds);
}

void router::arm_ask_timer() {
  auto deadline = asks_.next_deadline();
  if (stopping_ || !deadline) return;
  if (!ask_timer_) ask_timer_ = clock_->make_timer(strand_);
  ask_timer_armed_ = true;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*deadline - clock_->now());
  ask_timer_->after(std::max(wait, std::chrono::milliseconds(1)), [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->expire_asks();
  });
}

void router::expire_asks() {
  ask_timer_armed_ = false;
  for (auto& ended : asks_.expire(clock_->now())) {
    auto& series = ask_metrics(ended.pool);
    series.seconds->observe(ended.seconds);
    series.timeouts->add();
  }
  arm_ask_timer();
}

}  // namespace dde::host
