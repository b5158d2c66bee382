#include "api_limiter.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dde::test {

void api_limits::validate() const {
  auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; };
  if (limit < 1) throw std::invalid_argument("limit must be at least 1");
  if (per.count() < 1) throw std::invalid_argument("per must be at least 1 ms, got " + ms(per));
  if (penalty.count() < 1) throw std::invalid_argument("penalty must be at least 1 ms, got " + ms(penalty));
  if (!(penalty_factor >= 1) || penalty_factor > 1000)
    throw std::invalid_argument("penalty factor must be in [1, 1000], got " + std::to_string(penalty_factor));
  if (grace.count() < 0) throw std::invalid_argument("grace must not be negative, got " + ms(grace));
  if (max_penalty < penalty)
    throw std::invalid_argument("max penalty (" + ms(max_penalty) + ") is shorter than the penalty (" +
                                ms(penalty) + ")");
}

const char* to_string(api_verdict::refusal r) {
  switch (r) {
    case api_verdict::refusal::none: return "none";
    case api_verdict::refusal::violation: return "violation";
    case api_verdict::refusal::on_the_wire: return "on-the-wire";
    case api_verdict::refusal::during_cessation: return "during-cessation";
  }
  return "?";
}

nlohmann::json to_json(const api_stats& s) {
  return {{"calls", s.calls},
          {"ok", s.ok},
          {"limited", s.limited},
          {"escalations", s.escalations},
          {"callsDuringCessation", s.calls_during_cessation},
          {"currentPenaltyMs", s.current_penalty.count()},
          {"maxPenaltyMs", s.max_penalty.count()}};
}

api_limiter::api_limiter(api_limits limits) : limits_(limits), penalty_(limits.penalty) {
  limits_.validate();
}

std::chrono::milliseconds api_limiter::penalty_at(time_point now) const {
  // A cessation that ran out and stayed unviolated for `quiet` (one more first penalty) is forgiven.
  if (cessation_end_ && now >= *cessation_end_ + limits_.penalty) return limits_.penalty;
  return penalty_;
}

void api_limiter::start_cessation(time_point now, std::chrono::milliseconds length) {
  penalty_ = length;
  cessation_start_ = now;
  cessation_end_ = now + length;
  stats_.max_penalty = std::max(stats_.max_penalty, length);
}

api_verdict api_limiter::call(time_point now) {
  ++stats_.calls;
  penalty_ = penalty_at(now);
  api_verdict v;
  if (cessation_end_ && now < *cessation_end_) {
    ++stats_.limited;
    if (now - cessation_start_ < limits_.grace) {
      v.why = api_verdict::refusal::on_the_wire;
      v.retry_after = std::chrono::duration_cast<std::chrono::milliseconds>(*cessation_end_ - now);
      return v;
    }
    ++stats_.calls_during_cessation;
    v.why = api_verdict::refusal::during_cessation;
    auto longer = std::chrono::milliseconds(
        static_cast<std::int64_t>(double(penalty_.count()) * limits_.penalty_factor));
    longer = std::min(longer, limits_.max_penalty);
    if (longer > penalty_) ++stats_.escalations;
    start_cessation(now, longer);
    v.retry_after = longer;
    return v;
  }
  while (!accepted_.empty() && now - accepted_.front() >= limits_.per) accepted_.pop_front();
  if (accepted_.size() >= limits_.limit) {
    start_cessation(now, penalty_);
    ++stats_.limited;
    v.why = api_verdict::refusal::violation;
    v.retry_after = penalty_;
    return v;
  }
  accepted_.push_back(now);
  v.accepted = true;
  v.n = ++stats_.ok;
  return v;
}

api_stats api_limiter::stats(time_point now) const {
  auto s = stats_;
  s.current_penalty = penalty_at(now);
  return s;
}

void api_limiter::reset() {
  accepted_.clear();
  cessation_end_.reset();
  penalty_ = limits_.penalty;
  stats_ = {};
}

}  // namespace dde::test
