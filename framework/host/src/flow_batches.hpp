#pragma once
// The two batches a router's message flow moves in. A batch of deliveries from the MQS goes to the
// workers in one hop each (hand_over gathers each worker's share), so their done reports come back
// in bursts; done_reports takes a burst from the workers' strands to the router's strand in one hop,
// and the credit it frees is asked once, at its end.

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "dde/runtime/cell.hpp"

namespace dde::host {

class done_reports {
 public:
  /// From a worker's strand: true when it is the first report since the last burst was taken, and
  /// the caller sends the one hop that finishes them.
  bool add(std::size_t index, std::uint64_t delivery_id) {
    std::lock_guard lock(mutex_);
    inbox_.emplace_back(index, delivery_id);
    return inbox_.size() == 1;
  }
  /// On the router's strand: `finish(index, delivery_id)` for each report waiting, in order;
  /// finishing() is true meanwhile.
  template <class F>
  void finish_all(F&& finish) {
    {
      std::lock_guard lock(mutex_);
      batch_.swap(inbox_);
    }
    finishing_ = true;
    for (auto [index, delivery_id] : batch_) finish(index, delivery_id);
    batch_.clear();  // keeps its capacity for the next burst
    finishing_ = false;
  }
  bool finishing() const { return finishing_; }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::size_t, std::uint64_t>> inbox_, batch_;
  bool finishing_ = false;
};

class hand_over {
 public:
  using posting = runtime::cell::posting;
  /// Between begin() and end(), what goes to a worker is gathered rather than posted.
  void begin() { gathering_ = true; }
  bool gathering() const { return gathering_; }
  void add(std::size_t index, message&& msg, std::uint64_t delivery_id) {
    if (gathered_.size() <= index) gathered_.resize(index + 1);
    gathered_[index].emplace_back(std::move(msg), delivery_id);
  }
  /// `post(index, postings)` for each worker given something, in slot order.
  template <class F>
  void end(F&& post) {
    gathering_ = false;
    for (std::size_t index = 0; index < gathered_.size(); ++index) {
      auto& postings = gathered_[index];
      if (postings.empty()) continue;
      post(index, std::move(postings));
      postings.clear();  // moved from: empty, ready for the next batch
    }
  }

 private:
  bool gathering_ = false;
  std::vector<std::vector<posting>> gathered_;
};

}  // namespace dde::host
