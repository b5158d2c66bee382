#include "asks.hpp"

#include <algorithm>

namespace dde::host {

asks::asks(host::clock& clock, const strand_type& strand, const std::string& pool,
           std::chrono::milliseconds timeout)
    : clock_(clock), strand_(strand), tracker_(timeout) {
  series_of(pool);
}

asks::series& asks::series_of(const std::string& asked) {
  auto it = series_.find(asked);
  if (it != series_.end()) return it->second;
  auto& metrics = metrics_registry::process();
  metric_labels l = {{"pool", asked}};
  series s{&metrics.histogram("dde_host_ask_seconds",
                              "Round trip of an ask, from its sending to its reply or its timeout (60 s), "
                              "per asked pool, in the isolate system that asks.",
                              latency_buckets(), l),
           &metrics.counter(
               "dde_host_ask_timeouts_total",
               "Asks without a reply after 60 s, per asked pool, in the isolate system that asks.", l)};
  return series_.emplace(asked, s).first->second;
}

void asks::sent(const std::string& id, const std::string& asked, clock::time_point at) {
  tracker_.sent(id, asked, at);
  series_of(asked);
  if (tracker_.over_limit())
    expire();  // memory stays bounded whatever the workers ask
  else if (!armed_)
    arm();
}

void asks::replied(const std::string& in_reply_to) {
  if (in_reply_to.empty()) return;
  if (auto ended = tracker_.answered(in_reply_to, clock_.now()))
    series_of(ended->pool).seconds->observe(ended->seconds);
}

void asks::stop() {
  stopped_ = true;
  if (timer_) timer_->cancel();
}

void asks::arm() {
  auto deadline = tracker_.next_deadline();
  if (stopped_ || !deadline) return;
  if (!timer_) timer_ = clock_.make_timer(strand_);
  armed_ = true;
  auto wait = std::chrono::ceil<std::chrono::milliseconds>(*deadline - clock_.now());
  // The timer is this object's: its call never outlives it.
  timer_->after(std::max(wait, std::chrono::milliseconds(1)), [this] { expire(); });
}

void asks::expire() {
  armed_ = false;
  for (auto& ended : tracker_.expire(clock_.now())) {
    auto& s = series_of(ended.pool);
    s.seconds->observe(ended.seconds);
    s.timeouts->add();
  }
  arm();
}

}  // namespace dde::host
