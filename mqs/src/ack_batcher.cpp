#include "ack_batcher.hpp"

#include <algorithm>

namespace dde::mqs {

void ack_batcher::delivered(std::uint64_t tag, std::uint32_t consumer) {
  if (marks_.empty()) base_ = tag;
  if (tag < base_ + marks_.size()) return;  // not newer than what we know: ignore (never happens)
  // A gap (should not happen) is filled with settled marks so tags stay aligned.
  while (base_ + marks_.size() < tag) marks_.push_back({state::settled, 0});
  marks_.push_back({state::open, consumer});
  ++outstanding_;
  auto it = std::find_if(held_.begin(), held_.end(), [&](auto& h) { return h.first == consumer; });
  if (it == held_.end())
    held_.emplace_back(consumer, 1);
  else
    ++it->second;
}

std::uint32_t ack_batcher::held_by(std::uint32_t consumer) const {
  auto it = std::find_if(held_.begin(), held_.end(), [&](auto& h) { return h.first == consumer; });
  return it == held_.end() ? 0 : it->second;
}

void ack_batcher::close(mark& m, state to) {
  m.is = to;
  --outstanding_;
  auto it = std::find_if(held_.begin(), held_.end(), [&](auto& h) { return h.first == m.consumer; });
  if (it != held_.end() && --it->second == 0) {
    *it = held_.back();
    held_.pop_back();
  }
}

ack_batcher::mark* ack_batcher::find(std::uint64_t tag) {
  if (tag < base_ || tag >= base_ + marks_.size()) return nullptr;
  return &marks_[tag - base_];
}

void ack_batcher::ack(std::uint64_t tag, clock::time_point now) {
  mark* m = find(tag);
  if (!m || m->is != state::open) return;
  close(*m, state::ack);
  pending_.push_back({tag, hold_ > clock::duration::zero() ? now + hold_ : clock::time_point::min()});
}

void ack_batcher::reject(std::uint64_t tag, bool requeue) {
  mark* m = find(tag);
  if (!m || m->is != state::open) return;
  close(*m, state::settled);
  rejects_.emplace_back(tag, requeue);
}

void ack_batcher::flush(ack_sink& sink, clock::time_point now, bool all) {
  // Rejects go first: a later multiple ack must not cover them.
  for (auto [tag, requeue] : rejects_) sink.send_reject(channel_, tag, requeue);
  rejects_.clear();
  std::uint64_t last = 0;
  while (!marks_.empty() && marks_.front().is != state::open) {
    if (marks_.front().is == state::ack) last = base_;
    marks_.pop_front();
    ++base_;
  }
  if (last) sink.send_ack(channel_, last, true);
  // What the multiple ack did not cover (behind a delivery still open) goes alone once due.
  std::size_t kept = 0;
  for (auto& p : pending_) {
    mark* m = find(p.tag);
    if (!m || m->is != state::ack) continue;  // covered by the multiple ack
    if (all || p.due <= now) {
      sink.send_ack(channel_, p.tag, false);
      m->is = state::settled;
      continue;
    }
    pending_[kept++] = p;
  }
  pending_.resize(kept);
}

std::optional<ack_batcher::clock::time_point> ack_batcher::due() const {
  if (pending_.empty()) return std::nullopt;
  return pending_.front().due;
}

}  // namespace dde::mqs
