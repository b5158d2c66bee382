#include "scale_policy.hpp"

#include <algorithm>

namespace dde::host {

void scale_policy::changed(clock::time_point now) {
  last_change_ = now;
  low_since_.reset();
  above_ = false;
}

std::optional<scale_policy::change> scale_policy::sample(clock::time_point now, std::uint64_t backlog,
                                                         std::size_t workers, std::size_t idle) {
  if (!spec_.enabled()) return std::nullopt;
  auto text = [&](const char* what) {
    return std::string(what) + " (backlog " + std::to_string(backlog) + ", target " +
           std::to_string(spec_.target_backlog) + " per worker)";
  };
  if (workers < spec_.min) return change{spec_.min, text("below min")};
  if (workers > spec_.max) return change{spec_.max, text("above max")};
  // Workers the backlog needs at the target (rounded up), within the bounds.
  auto needed = std::clamp<std::size_t>(
      std::size_t((backlog + spec_.target_backlog - 1) / spec_.target_backlog), spec_.min, spec_.max);
  bool above = workers > 0 ? backlog > spec_.target_backlog * workers : backlog > 0;
  if (above) {
    low_since_.reset();
    bool stays = above_;
    above_ = true;
    if (!stays || workers >= spec_.max) return std::nullopt;  // one sample could be a burst
    auto to = std::min({spec_.max, std::max<std::size_t>(workers * 2, 1), needed});
    return change{std::max(to, workers + 1), text("backlog above target")};
  }
  above_ = false;
  if (needed >= workers || idle == 0) {
    low_since_.reset();
    return std::nullopt;
  }
  if (!low_since_) low_since_ = now;
  if (now - *low_since_ < spec_.cooldown || now - last_change_ < spec_.cooldown) return std::nullopt;
  auto to = std::max(needed, workers - std::min(idle, workers));
  if (to >= workers) return std::nullopt;
  return change{to, text("idle after the cool-down")};
}

}  // namespace dde::host
