#pragma once
// The messages the dequeuer's loop publishes itself (lease copies, dead-lettered copies): gathered
// during a turn and handed to the enqueuer at its end, counted in the enqueuer's flow like a host's.

#include <functional>
#include <utility>
#include <vector>

#include "enqueuer.hpp"

namespace dde::mqs {

class own_messages {
 public:
  using publisher = std::function<void(std::vector<outgoing_message>&&)>;

  void set_publisher(publisher publish) { publish_ = std::move(publish); }
  void add(outgoing_message m) { queued_.push_back(std::move(m)); }
  /// Hands what was added since the last flush to the publisher; without one (a test without an
  /// enqueuer) each is refused (its `settled(false)`).
  void flush() {
    if (queued_.empty()) return;
    auto out = std::move(queued_);
    queued_.clear();
    if (publish_) return publish_(std::move(out));
    for (auto& m : out) m.settled(false);
  }

 private:
  publisher publish_;
  std::vector<outgoing_message> queued_;
};

}  // namespace dde::mqs
