#pragma once
// Plugins at http:// and https:// URIs: downloaded into the isolate system's plugin cache on a thread
// of their own (a download can take seconds and must hold neither a router's strand nor an Asio
// thread), with conditional requests (If-None-Match / If-Modified-Since) so a poll of an unchanged
// plugin costs a 304 and no body.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "dde/protocol/pool_spec.hpp"  // is_remote_uri

namespace dde::host {

/// Where downloads go and how they run.
struct fetch_options {
  std::filesystem::path dir;                  ///< downloaded plugins are kept here (created when needed)
  std::string ca_file;                        ///< https: trust this CA file instead of the system store
  std::chrono::milliseconds timeout{120000};  ///< one download, start to end
  std::uint64_t max_size = 1024ull * 1024 * 1024;
};

/// What the server said last time, sent back so an unchanged plugin is not downloaded again.
struct fetch_validators {
  std::string etag;
  std::string last_modified;
};

/// The outcome of one fetch.
struct fetch_result {
  enum class kind { fetched, not_modified, failed };
  kind what = kind::failed;
  std::filesystem::path file;   ///< fetched: the downloaded plugin, named after its md5
  std::string md5;              ///< fetched: md5 of `file`
  fetch_validators validators;  ///< fetched: what to send on the next fetch
  std::string error;            ///< failed: why, e.g. "HTTP 503 Service Unavailable"
};

/// Downloads `uri` into `options.dir` as `<name>.<md5>.so` unless the server says it did not change
/// since `known`. Blocking; `cancel` (may be null) abandons it.
fetch_result fetch_plugin(const std::string& uri, const std::string& name, const fetch_validators& known,
                          const fetch_options& options, const std::atomic<bool>* cancel = nullptr);

/// One thread that runs fetches one after another. Destroying it abandons the fetch under way.
class plugin_fetcher {
 public:
  explicit plugin_fetcher(fetch_options options);
  ~plugin_fetcher();
  plugin_fetcher(const plugin_fetcher&) = delete;
  plugin_fetcher& operator=(const plugin_fetcher&) = delete;

  /// Queues a fetch; `done` runs on the fetcher's thread (post from there to where it belongs).
  void fetch(std::string uri, std::string name, fetch_validators known,
             std::function<void(fetch_result)> done);

 private:
  struct job {
    std::string uri, name;
    fetch_validators known;
    std::function<void(fetch_result)> done;
  };
  /// Shared with the thread, which may outlive this object by the end of a `done` callback.
  struct state {
    fetch_options options;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<job> jobs;
    bool stopping = false;
    std::atomic<bool> cancel{false};
  };
  static void run(const std::shared_ptr<state>& s);

  std::shared_ptr<state> state_;
  std::thread thread_;
};

}  // namespace dde::host
