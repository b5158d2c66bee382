#include "confirm_watch.hpp"

#include <algorithm>

namespace dde::mqs {

std::optional<std::string> confirm_watch::nacks_came(clock::time_point now) {
  if (!refusing_since_ || now - last_nack_ > refusing_pause) refusing_since_ = now;
  last_nack_ = now;
  if (now - *refusing_since_ < refusing_limit) return std::nullopt;
  return "the broker has kept nacking publishes for " + std::to_string(refusing_limit.count()) + " ms";
}

std::optional<std::string> confirm_watch::overdue(std::size_t unconfirmed, clock::time_point now) {
  auto limit = timeout_ * (1 << std::min(overdue_in_a_row_, 3));
  if (timeout_.count() == 0 || blocked_ || unconfirmed == 0 || now - last_settled_ < limit)
    return std::nullopt;
  ++overdue_in_a_row_;
  return std::to_string(unconfirmed) + " messages had no confirm for " + std::to_string(limit.count()) +
         " ms";
}

}  // namespace dde::mqs
