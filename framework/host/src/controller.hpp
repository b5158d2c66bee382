#pragma once
// The controller of an isolate system (thesis 3.2.1): starts, lists and stops its routers.

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dde/protocol/pool_spec.hpp"
#include "plugin_fetcher.hpp"
#include "pool_ops.hpp"

namespace dde::host {

class router;
class top_level;

class controller : public std::enable_shared_from_this<controller> {
 public:
  controller(boost::asio::io_context& io, std::shared_ptr<top_level> top, std::string system);

  /// Where routers send plugin events, and their plugin cache (see router::set_events). Before add_pool.
  void set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache);
  /// How pools download plugins at http(s) URIs. Before add_pool.
  void set_fetch_options(fetch_options options);
  /// Plugins (and custom routers) may come only from these directories or URL prefixes (empty: anywhere).
  void set_plugin_allow(std::vector<std::string> allow) { plugin_allow_ = std::move(allow); }
  /// Deploys a pool (after downloading its plugin, for an http(s) uri). With `link_timeout`, only once
  /// the isolate system's MQS link is up: refused (504) when it is not within that time.
  void add_pool(pool_spec spec, op_done done,
                std::optional<std::chrono::milliseconds> link_timeout = std::nullopt);
  /// Stops one pool (its in-flight messages finish first).
  void remove_pool(const std::string& isolate, op_done done);
  /// RESTART of every worker of one pool (after its in-flight messages finish).
  void restart_pool(const std::string& isolate, op_done done);
  /// KILL of one worker (`worker_id`) or of every worker ("") of one pool; `done` gets the ids of
  /// the workers being killed, or why not.
  void kill_workers(const std::string& isolate, std::string worker_id, kill_done done);
  /// Changes a pool's rate/maxInFlight at run time.
  void set_rate(const std::string& isolate, std::size_t messages, std::chrono::milliseconds per,
                std::size_t max_in_flight, op_done done);
  /// `{systemName: [pool, ...]}` as in thesis 3.2.2: every pool, or those named in `only` that run.
  void describe(const std::set<std::string>& only, std::function<void(nlohmann::json)> fn);
  void describe(std::function<void(nlohmann::json)> fn) { describe({}, std::move(fn)); }
  /// Stops every pool.
  void shutdown(std::function<void()> done);

 private:
  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<top_level> top_;
  std::string system_;
  /// Gets the plugin of a pool in starting_ ready (downloads it), then starts it.
  void prepare_pool(const std::string& isolate);
  /// Starts a prepared pool, on the strand.
  void start_pool(const std::string& isolate, result<bool> prepared);

  std::map<std::string, std::shared_ptr<router>> routers_;
  struct starting {
    std::shared_ptr<router> pool;
    op_done done;
  };
  std::map<std::string, starting> starting_;  ///< pools whose plugin is being downloaded
  bool stopped_ = false;
  fetch_options fetch_options_;
  std::vector<std::string> plugin_allow_;
  std::function<void(nlohmann::json)> events_;
  std::string plugin_cache_;
};

}  // namespace dde::host
