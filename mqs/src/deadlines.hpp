#pragma once
// A broker loop's deadlines in one place, one slot per kind of timed work (connect, sweep, ...):
// whether each is due, and when the loop must next wake for the kinds that can do something now.
// The dequeuer's and the enqueuer's loops keep theirs here, so that what wakes a loop is computed in
// one function from one table rather than from a member per deadline.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>

namespace dde::mqs {

/// `Kind` is an enum whose last enumerator is `count`.
template <class Kind>
class deadlines {
 public:
  using clock = std::chrono::steady_clock;
  using time_point = clock::time_point;
  static constexpr time_point never = time_point::max();

  /// Every kind starts due (the loop's first turn does each), unless set otherwise.
  deadlines() { at_.fill(time_point{}); }

  time_point at(Kind k) const { return at_[index(k)]; }
  bool due(Kind k, time_point now) const { return now >= at(k); }
  void set(Kind k, time_point when) { at_[index(k)] = when; }
  /// Brings `k` forward to `when` if that is sooner.
  void sooner(Kind k, time_point when) { set(k, std::min(at(k), when)); }
  void clear(Kind k) { set(k, never); }

  /// The earliest deadline among the kinds for which `counts(kind)` is true (never: none).
  template <class Pred>
  time_point next(Pred counts) const {
    auto out = never;
    for (std::size_t i = 0; i < size; ++i)
      if (counts(Kind(i))) out = std::min(out, at_[i]);
    return out;
  }

 private:
  static constexpr std::size_t size = std::size_t(Kind::count);
  static constexpr std::size_t index(Kind k) { return std::size_t(k); }
  std::array<time_point, size> at_{};
};

}  // namespace dde::mqs
