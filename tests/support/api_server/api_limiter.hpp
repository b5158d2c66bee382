#pragma once
// The rules of the test API server, without HTTP: a sliding-window rate limit and a penalty
// ("cessation") that escalates when the client calls during it, as ad platforms do (seed 001:
// GoogleAds answers a 15 s cessation, growing to 15 min when called during one). Time is passed in,
// so tests decide what "now" is.

#include <chrono>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <optional>

namespace dde::test {

/// The limit and the penalties. `quiet` after a cessation ends without a violation, the penalty
/// drops back to `penalty`.
struct api_limits {
  std::uint32_t limit = 10;  ///< accepted calls in every window of `per`
  std::chrono::milliseconds per{1000};
  std::chrono::milliseconds penalty{1000};  ///< the first cessation
  double penalty_factor = 2;                ///< a call during a cessation multiplies it by this
  std::chrono::milliseconds max_penalty{60000};
  /// Calls that arrive within `grace` of a cessation's start were on the wire when it began (other
  /// connections of the same client): they are refused with the time left, not escalated.
  std::chrono::milliseconds grace{0};
  /// Throws std::invalid_argument naming the first field that is out of range.
  void validate() const;
};

/// What one call gets.
struct api_verdict {
  bool accepted = false;
  std::uint64_t n = 0;                       ///< the accepted call's number (1, 2, ...); 0 when refused
  std::chrono::milliseconds retry_after{0};  ///< when refused: what is left of the cessation
  /// When refused, why: the call that broke the limit, one within `grace` of a cessation's start, or
  /// one during a cessation (which restarts it, longer unless at the max penalty).
  enum class refusal { none, violation, on_the_wire, during_cessation } why = refusal::none;
};
const char* to_string(api_verdict::refusal r);

/// Counters since the start (or the last reset).
struct api_stats {
  std::uint64_t calls = 0;
  std::uint64_t ok = 0;
  std::uint64_t limited = 0;
  std::uint64_t escalations = 0;             ///< calls during a cessation that made the penalty longer
  std::uint64_t calls_during_cessation = 0;  ///< every one of them restarts the cessation
  std::chrono::milliseconds current_penalty{0};
  std::chrono::milliseconds max_penalty{0};  ///< the longest cessation imposed so far
};
nlohmann::json to_json(const api_stats& s);

class api_limiter {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  /// Validates `limits` (std::invalid_argument).
  explicit api_limiter(api_limits limits);

  /// One call at `now` (never earlier than the previous one's).
  api_verdict call(time_point now);
  api_stats stats(time_point now) const;
  /// Forgets every call, cessation and counter.
  void reset();
  const api_limits& limits() const { return limits_; }

 private:
  std::chrono::milliseconds penalty_at(time_point now) const;
  void start_cessation(time_point now, std::chrono::milliseconds length);

  api_limits limits_;
  std::deque<time_point> accepted_;  ///< accepted calls of the last `per`
  std::optional<time_point> cessation_end_;
  time_point cessation_start_{};
  std::chrono::milliseconds penalty_;
  api_stats stats_;
};

}  // namespace dde::test
