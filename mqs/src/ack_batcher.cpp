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

void ack_batcher::ack(std::uint64_t tag) {
  mark* m = find(tag);
  if (!m || *m != mark::open) return;
  *m = mark::ack;
  --outstanding_;
  acks_.push_back(tag);
}

void ack_batcher::reject(std::uint64_t tag, bool requeue) {
  mark* m = find(tag);
  if (!m || *m != mark::open) return;
  *m = mark::settled;
  --outstanding_;
  rejects_.emplace_back(tag, requeue);
}

void ack_batcher::flush(ack_sink& sink) {
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
  for (auto tag : acks_) {
    mark* m = find(tag);
    if (m && *m == mark::ack) {
      sink.send_ack(channel_, tag, false);
      *m = mark::settled;
    }
  }
  acks_.clear();
}

}  // namespace dde::mqs
