#include "canary_judge.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dde::host {
namespace {

std::string percent(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", rate * 100);
  return text;
}

/// Rounded to 4 decimals for describe (a rate of 1/3 reads 0.3333).
double rounded(double rate) { return std::round(rate * 1e4) / 1e4; }

}  // namespace

nlohmann::json to_json(const version_counts& c) {
  return {{"handled", c.handled}, {"failed", c.failed}, {"failureRate", rounded(c.failure_rate())}};
}

canary_judge::canary_judge(canary_spec spec, time_point started, version_counts old_before)
    : spec_(spec), started_(started), old_before_(old_before) {}

canary_judge::verdict canary_judge::judge(time_point now) const {
  if (now < window_end() || canary_.total() < spec_.min_messages) return verdict::wait;
  // A small tolerance, so that a threshold of exactly the difference (0.3 - 0.1 vs 0.2) promotes.
  bool worse = canary_.failure_rate() - baseline().failure_rate() > spec_.max_increase + 1e-9;
  return worse ? verdict::roll_back : verdict::promote;
}

std::string canary_judge::explain() const {
  const auto& old = baseline();
  return "canary failure rate " + percent(canary_.failure_rate()) + " (" + std::to_string(canary_.failed) +
         " of " + std::to_string(canary_.total()) + ") against the old version's " +
         percent(old.failure_rate()) + " (" + std::to_string(old.failed) + " of " +
         std::to_string(old.total()) + (old_.total() > 0 ? "" : ", before the canary") + "); at most " +
         percent(spec_.max_increase) + " more is allowed";
}

nlohmann::json canary_judge::describe(time_point now) const {
  auto ends_in = std::chrono::duration_cast<std::chrono::milliseconds>(window_end() - now).count();
  return {{"canary", to_json(canary_)},
          {"baseline", to_json(baseline())},
          {"baselineBeforeCanary", old_.total() == 0},
          {"windowEndsInMs", std::max<long long>(0, ends_in)},
          {"minMessages", spec_.min_messages},
          {"maxFailureRateIncrease", spec_.max_increase},
          {"waitingFor", now < window_end()                     ? "window"
                         : canary_.total() < spec_.min_messages ? "minMessages"
                                                                : "verdict"}};
}

}  // namespace dde::host
