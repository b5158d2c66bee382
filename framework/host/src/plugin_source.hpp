#pragma once
// Where a pool's plugin comes from and which of its versions the pool runs (hot deployment, thesis
// 3.2.1's FileMonitor and 3.3.1): the first load (from the file, an http(s) download, or the copy of
// the last version that worked after a crash), each poll for a new version, versions refused and why,
// the first message done by a new version (which keeps a copy of it and tells the activator), and the
// downloads. It knows no worker cells: the pool swaps them when it accepts a new version.

#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/result.hpp"
#include "plugin_fetcher.hpp"
#include "runtime.hpp"

namespace dde::host {

/// The pool as its plugin source sees it.
class swap_target {
 public:
  virtual ~swap_target() = default;
  /// A swap or a restart is under way: no new version now.
  virtual bool swap_busy() const = 0;
  /// The version the pool's local workers run (null: none runs here).
  virtual std::shared_ptr<worker_plugin> running() const = 0;
  /// Begins running `plugin` instead; an error leaves the running version serving.
  virtual result<bool> swap_to(std::shared_ptr<worker_plugin> plugin) = 0;
};

class plugin_source {
 public:
  using fetch_done = std::function<void(fetch_result)>;
  /// Makes a download's callback: given what to run on the pool's strand, a callback safe to call
  /// from the download thread, which does nothing once the pool is gone.
  using on_strand = std::function<fetch_done(fetch_done)>;

  plugin_source(const pool_spec& spec, swap_target& pool, on_strand bind);
  ~plugin_source();

  /// Where plugin events go (the activator: pluginSwapping, pluginGood), and where copies of each
  /// version that worked are kept so a restarted isolate system can fall back to one.
  void set_events(std::function<void(nlohmann::json)> events, std::string cache);
  /// How plugins at http(s) URIs are downloaded (cache directory, CA file).
  void set_fetch_options(fetch_options options) { download_.options = std::move(options); }

  /// Gets the plugin ready to load: downloads it when its uri is http(s); `ready` runs on the strand.
  void prepare(std::function<void(result<bool>)> ready);
  /// Loads the version to start with: the last one that worked after a crash, else the running file.
  result<std::shared_ptr<worker_plugin>> load_first() const;
  /// The pool starts after the activator saw a new version crash it: report that version refused.
  void refuse_crashed();
  /// One poll: loads a new version of the file (or download) and offers it to the pool.
  void check();
  /// The pool runs the new version it was offered now (not a RESTART): `pause` is how long it held
  /// messages for the swap.
  void swapped(std::chrono::milliseconds pause);
  void restarted(std::chrono::milliseconds pause) { last_pause_ms_ = pause.count(); }
  /// The new version it offered runs as a canary on some workers (state "canary").
  void canary_started() { state_ = "canary"; }
  /// The canary of version `md5` was rolled back: refused (as a version that does not load), not
  /// tried again until the plugin changes.
  void rolled_back(const std::string& md5, const std::string& why);
  /// A message was done by the running version: the first one proves it (once per version). Called
  /// for every message done, so the check is inline.
  void proven() {
    if (proving_) prove();
  }
  /// The pool stops: a download that comes back is dropped.
  void stop() { stopping_ = true; }
  /// The stopped pool starts again (RESTART after supervision stopped it).
  void resume() { stopping_ = false; }
  /// "hotDeploy" for describe.
  nlohmann::json describe() const;
  /// An error of a downloaded plugin, saying where it came from.
  std::string with_source(const std::string& error) const;

 private:
  std::filesystem::path running_file() const;
  /// The running version finished its first message: keep a copy of it, tell the activator.
  void prove();
  void fetch(fetch_done on_strand_done);
  void on_fetched(fetch_result fetched);
  void note_fetch_error(const std::string& error);
  /// Offers a loaded new version to the pool; false when it refused it (the version is refused).
  bool offer(const std::string& md5, std::shared_ptr<worker_plugin> plugin);
  void refuse(const std::string& md5, const std::string& why, plugin_failure reason);

  const pool_spec& spec_;
  swap_target& pool_;
  on_strand bind_;
  std::function<void(nlohmann::json)> events_;
  std::string cache_;
  /// Where a swap in progress is marked for the activator ("" without a plugin cache).
  std::filesystem::path swap_marker() const;
  std::string refused_md5_;  ///< a version already refused is not tried again
  std::string state_ = "running";
  std::string error_;
  std::uint64_t swaps_ = 0;
  long long last_pause_ms_ = 0;
  bool proving_ = true;  ///< the running version has not finished a message yet
  bool stopping_ = false;
  /// An http(s) uri: how it is downloaded, the running version's download and what the server said
  /// about it.
  struct downloads {
    fetch_options options;
    std::unique_ptr<plugin_fetcher> fetcher;  ///< off the Asio threads
    std::filesystem::path fetched_file;
    std::filesystem::path next_file;  ///< the download being swapped in
    fetch_validators validators;
    bool in_flight = false;
    std::string error;  ///< why the last poll failed ("" = it did not)
  } download_;
};

}  // namespace dde::host
