#pragma once
// The top level's table of its pools, by topic: where each pool's deliveries and replies go (its
// router, held weakly: a sink gone is a pool gone), where its pauses go, and the depth questions it
// asked that the MQS has not answered yet (answered in asking order, per topic). Runs on the top
// level's strand.

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>

#include "mqs_link.hpp"

namespace dde::host {

class pool_sinks {
 public:
  void attach(const std::string& topic, std::weak_ptr<topic_sink> sink) { sinks_[topic] = std::move(sink); }
  /// Forgets the pool's sink and its pause handler.
  void detach(const std::string& topic);
  /// The pool of `topic`, if it is still there.
  std::shared_ptr<topic_sink> find(const std::string& topic) const;
  /// Every pool still there hears that the link is up again.
  void connected() const;

  /// Where the pauses of `topic` go (an empty handler removes it).
  void set_pause_handler(const std::string& topic, mqs_link::pause_handler fn);
  /// Hands a pause to the pool of `topic`; false when no pool of it is here (any more).
  bool pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason,
             const std::string& origin) const;

  /// A depth question about `topic` is on its way: `fn` hears its answer.
  void asked_depth(const std::string& topic, mqs_link::depth_handler fn) {
    depths_[topic].push_back(std::move(fn));
  }
  /// The MQS's answer about `topic` goes to its oldest question (none waiting: dropped).
  void answer_depth(const std::string& topic, std::uint64_t messages, std::uint64_t consumers,
                    const std::string& error);
  /// Every question still waiting hears `error` (the link it was asked on is gone).
  void fail_depths(const std::string& error);

 private:
  std::unordered_map<std::string, std::weak_ptr<topic_sink>> sinks_;
  std::unordered_map<std::string, mqs_link::pause_handler> pause_handlers_;
  std::unordered_map<std::string, std::deque<mqs_link::depth_handler>> depths_;
};

}  // namespace dde::host
