#include "dde/mqs/ack_batcher.hpp"

namespace dde::mqs {

void ack_batcher::delivered(std::uint64_t tag) {
  if (marks_.empty()) base_ = tag;
  if (tag < base_ + marks_.size()) return;  // not newer than what we know: ignore (never happens)
  // A gap (should not happen) is filled with settled marks so tags stay aligned.
  while (base_ + marks_.size() < tag) marks_.push_back(mark::settled);
  marks_.push_back(mark::open);
  ++outstanding_;
}

ack_batcher::mark* ack_batcher::find(std::uint64_t tag) {
  if (tag < base_ || tag >= base_ + marks_.size()) return nullptr;
  return &marks_[tag - base_];
}

void ack_batcher::ack(std::uint64_t tag, clock::time_point now) {
  mark* m = find(tag);
  if (!m || *m != mark::open) return;
  *m = mark::ack;
  --outstanding_;
  pending_.push_back({tag, hold_ > clock::duration::zero() ? now + hold_ : clock::time_point::min()});
}

void ack_batcher::reject(std::uint64_t tag, bool requeue) {
  mark* m = find(tag);
  if (!m || *m != mark::open) return;
  *m = mark::settled;
  --outstanding_;
  rejects_.emplace_back(tag, requeue);
}

void ack_batcher::flush(ack_sink& sink, clock::time_point now, bool all) {
  // Rejects go first: a later multiple ack must not cover them.
  for (auto [tag, requeue] : rejects_) sink.send_reject(channel_, tag, requeue);
  rejects_.clear();
  std::uint64_t last = 0;
  while (!marks_.empty() && marks_.front() != mark::open) {
    if (marks_.front() == mark::ack) last = base_;
    marks_.pop_front();
    ++base_;
  }
  if (last) sink.send_ack(channel_, last, true);
  // What the multiple ack did not cover (behind a delivery still open) goes alone once due.
  std::size_t kept = 0;
  for (auto& p : pending_) {
    mark* m = find(p.tag);
    if (!m || *m != mark::ack) continue;  // covered by the multiple ack
    if (all || p.due <= now) {
      sink.send_ack(channel_, p.tag, false);
      *m = mark::settled;
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
