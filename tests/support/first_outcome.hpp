#pragma once
// The first of several outcomes reported from any thread (later ones are ignored): what a test
// handler of a connection reports as "open", "echo", "closed: why" or a failure.

#include <future>
#include <mutex>
#include <string>

namespace dde::test {

class first_outcome {
 public:
  /// Records `outcome` unless one was recorded before.
  void settle(const std::string& outcome) {
    std::lock_guard lock(mutex_);
    if (!settled_) promise_.set_value(outcome);
    settled_ = true;
  }
  /// The future of the first outcome; call once.
  std::future<std::string> outcome() { return promise_.get_future(); }

 private:
  std::mutex mutex_;
  bool settled_ = false;
  std::promise<std::string> promise_;
};

}  // namespace dde::test
