// A pool's `canary` field (canary hot deployment): its parser, its deploy-body form and the share of
// workers it takes. Beside pool_spec.cpp, which calls it for the field.
#include <algorithm>
#include <cmath>

#include "dde/protocol/pool_spec.hpp"

namespace dde {

std::size_t canary_spec::share_of(std::size_t eligible) const {
  if (eligible == 0) return 0;
  std::size_t want = workers > 0 ? workers : (eligible * std::size_t(percent) + 99) / 100;
  // The old version keeps at least one worker, to compare the canary with, while there are two.
  std::size_t most = eligible > 1 ? eligible - 1 : 1;
  return std::clamp<std::size_t>(want, 1, most);
}

std::string parse_canary_spec(const nlohmann::json& field, canary_spec& out) {
  const std::string shape =
      "field \"canary\" must be {\"workers\": 1..1024 | \"percent\": 1..100, \"windowMs\": 100..86400000, "
      "\"minMessages\": 1..1000000, \"maxFailureRateIncrease\": 0..1}";
  if (!field.is_object()) return shape;
  for (auto& [key, value] : field.items())
    if (key != "workers" && key != "percent" && key != "windowMs" && key != "minMessages" &&
        key != "maxFailureRateIncrease")
      return "unknown field canary." + key + ": " + shape;
  auto integer = [&](const char* key, long long min, long long max, long long& value) -> std::string {
    auto it = field.find(key);
    if (it == field.end()) return {};
    if (!it->is_number_integer() || it->get<long long>() < min || it->get<long long>() > max)
      return std::string("canary.") + key + " must be an integer from " + std::to_string(min) + " to " +
             std::to_string(max) + ", got " + it->dump().substr(0, 100);
    value = it->get<long long>();
    return {};
  };
  long long workers = 0, percent = 0, window = out.window.count(), min_messages = 20;
  if (auto e = integer("workers", 1, 1024, workers); !e.empty()) return e;
  if (auto e = integer("percent", 1, 100, percent); !e.empty()) return e;
  if (auto e = integer("windowMs", 100, 86400000, window); !e.empty()) return e + " (milliseconds)";
  if (auto e = integer("minMessages", 1, 1000000, min_messages); !e.empty()) return e;
  if (field.contains("workers") && field.contains("percent"))
    return "canary.workers and canary.percent exclude each other: give the canary's share one way";
  if (auto it = field.find("maxFailureRateIncrease"); it != field.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
        it->get<double>() > 1)
      return "canary.maxFailureRateIncrease must be a number from 0 to 1 (a share of messages, e.g. 0.05), "
             "got " +
             it->dump().substr(0, 100);
    out.max_increase = it->get<double>();
  }
  out.workers = std::size_t(workers);
  out.percent = int(percent);
  if (!out.enabled()) out.workers = 1;  // `{}`: one worker, the other fields' defaults
  out.window = std::chrono::milliseconds(window);
  out.min_messages = std::uint64_t(min_messages);
  return {};
}

nlohmann::json to_json(const canary_spec& spec) {
  nlohmann::json j = {{"windowMs", spec.window.count()},
                      {"minMessages", spec.min_messages},
                      {"maxFailureRateIncrease", spec.max_increase}};
  if (spec.workers > 0)
    j["workers"] = spec.workers;
  else
    j["percent"] = spec.percent;
  return j;
}

}  // namespace dde
