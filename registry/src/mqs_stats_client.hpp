#pragma once
// Asks dde-mqs processes for their topics' figures (GET /topics?names=...) on a thread of its own:
// the HTTP client blocks, the registry's strand must not. One round at a time.

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "pool_monitor.hpp"

namespace dde::registry {

/// The HTTP URL of an MQS's GET /topics for a `ws://host:port/mqs` (or wss://) URL; nullopt if not one.
/// The HTTP base URL (scheme and authority) of an MQS known by its `ws://host:port/mqs` (wss: https).
std::optional<std::string> mqs_http_base(const std::string& mqs_ws_url);
std::optional<std::string> topics_url(const std::string& mqs_ws_url, const std::set<std::string>& topics);

class mqs_stats_client {
 public:
  /// Figures keyed by "mqsUrl topic", and the first error met ("" if none).
  using done_fn = std::function<void(std::map<std::string, topic_sample>, std::string)>;

  mqs_stats_client();
  ~mqs_stats_client();
  mqs_stats_client(const mqs_stats_client&) = delete;
  mqs_stats_client& operator=(const mqs_stats_client&) = delete;

  /// Asks every MQS of `topics` (by MQS URL); `done` runs on the client's thread. A round asked
  /// while one runs replaces any round still waiting.
  void ask(std::map<std::string, std::set<std::string>> topics, done_fn done);
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::pair<std::map<std::string, std::set<std::string>>, done_fn>> next_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dde::registry
