#pragma once
// Reads queue depths from the broker for GET /metrics and GET /queues: its own thread and AMQP
// connection (no heartbeats: it is idle between questions), a passive queue.declare per topic.
// A topic whose queue does not exist is reported absent, not an error.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dde/mqs/config.hpp"

namespace dde::mqs {

class amqp_session;

/// What the broker said of one queue.
struct queue_depth {
  std::uint64_t messages = 0;  ///< ready (not yet delivered)
  std::uint64_t consumers = 0;
};

/// The answer to one question: depths of the queues that exist, or why the broker could not be asked.
struct depth_report {
  std::map<std::string, queue_depth> queues;
  std::string error;  ///< empty when the broker answered
};

class queue_inspector {
 public:
  explicit queue_inspector(const config& cfg);
  ~queue_inspector();
  queue_inspector(const queue_inspector&) = delete;
  queue_inspector& operator=(const queue_inspector&) = delete;

  /// Thread-safe: asks for `queues`; `done` runs later on the inspector's thread.
  void ask(std::vector<std::string> queues, std::function<void(depth_report)> done);
  /// Joins the thread; questions not yet asked are answered with an error.
  void stop();

 private:
  struct question {
    std::vector<std::string> queues;
    std::function<void(depth_report)> done;
  };
  void run();
  depth_report answer(const std::vector<std::string>& queues);

  config cfg_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<question> questions_;
  bool stopping_ = false;
  std::unique_ptr<amqp_session> session_;  ///< owned by the thread
  std::size_t first_node_ = 0;             ///< the broker node its next connection tries first
  std::thread thread_;
};

}  // namespace dde::mqs
