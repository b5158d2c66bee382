#pragma once
// Runs the registry's HTTP calls to dde-mqs processes (the dead-letter endpoints) on a thread of its
// own: the HTTP client blocks, the registry's strand must not. Calls are made one at a time, in order.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "mqs_http.hpp"

namespace dde::registry {

class mqs_http_client {
 public:
  /// `cluster_secret` goes with every call (X-DDE-Cluster-Secret) when not empty.
  explicit mqs_http_client(std::string cluster_secret);
  ~mqs_http_client();
  mqs_http_client(const mqs_http_client&) = delete;
  mqs_http_client& operator=(const mqs_http_client&) = delete;

  /// Queues `call`; `done` runs on the client's thread (calls left at stop are answered unreached).
  void call(mqs_call call, std::function<void(mqs_reply)> done);
  void stop();

 private:
  void run();

  std::string secret_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<mqs_call, std::function<void(mqs_reply)>>> calls_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dde::registry
