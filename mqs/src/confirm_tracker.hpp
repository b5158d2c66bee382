#pragma once
/// \file
/// Publisher confirms on one channel in confirm mode: the broker numbers the publishes 1, 2, 3...
/// and later acks or nacks them, one at a time or `multiple` (all up to a tag). This keeps what
/// was published until then, so it can be confirmed to its host or republished after a reconnect.

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace dde::mqs {

template <class T>
class confirm_tracker {
 public:
  /// Records a publish; returns its delivery tag.
  std::uint64_t published(T item) {
    slots_.emplace_back(std::move(item));
    ++size_;
    return first_ + slots_.size() - 1;
  }

  /// The broker acked (or nacked) `tag`, or every tag up to it with `multiple`. Appends the
  /// settled items to `out` in publish order; unknown tags are ignored.
  void settle(std::uint64_t tag, bool multiple, std::vector<T>& out) {
    if (tag < first_ || tag >= first_ + slots_.size()) {
      if (!multiple || tag < first_) return;
      tag = first_ + slots_.size() - 1;  // cover what we have
      if (slots_.empty()) return;
    }
    std::size_t end = tag - first_ + 1;
    for (std::size_t i = multiple ? 0 : end - 1; i < end; ++i) {
      if (slots_[i]) {
        out.push_back(std::move(*slots_[i]));
        slots_[i].reset();
        --size_;
      }
    }
    while (!slots_.empty() && !slots_.front()) {
      slots_.pop_front();
      ++first_;
    }
  }

  /// Everything not yet settled, in publish order, and numbering restarts at 1 (a new channel).
  std::vector<T> reset() {
    std::vector<T> out;
    out.reserve(size_);
    for (auto& s : slots_)
      if (s) out.push_back(std::move(*s));
    slots_.clear();
    first_ = 1;
    size_ = 0;
    return out;
  }

  /// Published and not yet settled.
  std::size_t size() const { return size_; }

 private:
  std::deque<std::optional<T>> slots_;
  std::uint64_t first_ = 1;  ///< tag of slots_.front()
  std::size_t size_ = 0;
};

}  // namespace dde::mqs
