#include "plugin_source.hpp"

#include "dde/log.hpp"
#include "dde/protocol/swap_marker.hpp"
#include "dde/runtime/load_failures.hpp"

namespace dde::host {

plugin_source::plugin_source(const pool_spec& spec, swap_target& pool, on_strand bind)
    : spec_(spec), pool_(pool), bind_(std::move(bind)) {}

plugin_source::~plugin_source() = default;

void plugin_source::set_events(std::function<void(nlohmann::json)> events, std::string cache) {
  events_ = std::move(events);
  cache_ = std::move(cache);
}

void plugin_source::prepare(std::function<void(result<bool>)> ready) {
  // After a crash the activator has the pool start from the kept copy of the last good version.
  if (!is_remote_uri(spec_.uri) || !spec_.last_good_copy.empty()) return ready(true);
  fetch([this, ready](fetch_result fetched) {
    using kind = fetch_result::kind;
    if (fetched.what != kind::fetched)
      return ready(result<bool>::failure(
          "cannot fetch plugin " + spec_.uri + ": " +
              (fetched.what == kind::failed ? fetched.error
                                            : "the server answered 304 to a request without validators"),
          plugin_failure::fetch));
    download_.fetched_file = fetched.file;
    download_.validators = fetched.validators;
    ready(true);
  });
}

void plugin_source::fetch(fetch_done on_strand_done) {
  if (!download_.fetcher) download_.fetcher = std::make_unique<plugin_fetcher>(download_.options);
  download_.fetcher->fetch(spec_.uri, spec_.system + "." + spec_.isolate, download_.validators,
                           bind_(std::move(on_strand_done)));
}

result<std::shared_ptr<worker_plugin>> plugin_source::load_first() const {
  auto path = spec_.last_good_copy.empty() ? running_file() : std::filesystem::path(spec_.last_good_copy);
  auto plugin = worker_plugin::load(path, spec_.sha256);
  if (!plugin)
    return result<std::shared_ptr<worker_plugin>>::failure_of(plugin,
                                                              [this](auto& e) { return with_source(e); });
  return plugin;
}

void plugin_source::refuse_crashed() {
  refused_md5_ = spec_.crashed_md5;
  state_ = "refused";
  error_ = "version " + spec_.crashed_md5 + " crashed the isolate system (" + spec_.crash_reason +
           ") before it finished a message; running the last version that worked";
  proving_ = false;
  count_plugin_load_failure(spec_.addr().topic(), plugin_failure::crashed);
  logger("host.router")->error("{}: {}", spec_.addr().str(), error_);
}

std::string plugin_source::with_source(const std::string& error) const {
  return is_remote_uri(spec_.uri) ? error + " (downloaded from " + spec_.uri + ")" : error;
}

std::filesystem::path plugin_source::running_file() const {
  return is_remote_uri(spec_.uri) ? download_.fetched_file : std::filesystem::path(spec_.plugin_path());
}

void plugin_source::check() {
  if (stopping_ || pool_.swap_busy()) return;
  if (is_remote_uri(spec_.uri)) {
    // One poll at a time: a slow server delays the next one rather than piling them up.
    if (download_.in_flight) return;
    download_.in_flight = true;
    return fetch([this](fetch_result fetched) { on_fetched(std::move(fetched)); });
  }
  auto md5 = file_md5(spec_.plugin_path());
  if (md5.empty())
    return refuse("missing", "plugin file " + spec_.plugin_path() + " is missing or unreadable",
                  plugin_failure::missing);
  auto running = pool_.running();
  if (md5 == running->object().md5() || md5 == refused_md5_) return;
  logger("host.router")
      ->info("{}: plugin {} changed (md5 {}): loading the new version", spec_.addr().str(), spec_.uri, md5);
  // Everything that can refuse the new version happens before the old one stops.
  auto loaded = worker_plugin::load(spec_.plugin_path(), spec_.sha256);
  if (!loaded) return refuse(md5, loaded.error(), loaded.code<plugin_failure>());
  offer(md5, loaded.value());
}

bool plugin_source::offer(const std::string& md5, std::shared_ptr<worker_plugin> plugin) {
  auto loaded_md5 = plugin->object().md5();
  // Before the new version can take a message: if it kills the process, the activator learns which
  // version did even when the pluginSwapping event below never leaves (dde/protocol/swap_marker.hpp).
  auto marker = swap_marker();
  if (!marker.empty()) protocol::write_swap_marker(marker, loaded_md5);
  auto swapped = pool_.swap_to(std::move(plugin));
  if (!swapped) {
    if (!marker.empty()) protocol::remove_swap_marker(marker);
    refuse(md5, swapped.error(), swapped.code<plugin_failure>());
    return false;
  }
  if (events_) events_({{"event", "pluginSwapping"}, {"isolateName", spec_.isolate}, {"md5", loaded_md5}});
  return true;
}

void plugin_source::on_fetched(fetch_result fetched) {
  download_.in_flight = false;
  auto forget = [this](const std::filesystem::path& file) {
    std::error_code ignored;
    if (!file.empty() && file != download_.fetched_file) std::filesystem::remove(file, ignored);
  };
  if (stopping_) return forget(fetched.file);
  if (fetched.what == fetch_result::kind::failed) return note_fetch_error(fetched.error);
  note_fetch_error({});
  if (fetched.what == fetch_result::kind::not_modified) return;
  // A swap or restart began meanwhile: keep the old validators, so the next poll asks again.
  if (pool_.swap_busy()) return forget(fetched.file);
  download_.validators = fetched.validators;
  auto running = pool_.running();
  if (fetched.md5 == running->object().md5() || fetched.md5 == refused_md5_) return forget(fetched.file);
  logger("host.router")
      ->info("{}: plugin {} changed (md5 {}): loading the new version", spec_.addr().str(), spec_.uri,
             fetched.md5);
  auto loaded = worker_plugin::load(fetched.file, spec_.sha256);
  if (!loaded) {
    forget(fetched.file);
    return refuse(fetched.md5, with_source(loaded.error()), loaded.code<plugin_failure>());
  }
  download_.next_file = fetched.file;
  if (!offer(fetched.md5, loaded.value())) {
    download_.next_file.clear();
    forget(fetched.file);
  }
}

void plugin_source::note_fetch_error(const std::string& error) {
  if (error == download_.error) return;
  if (error.empty())
    logger("host.router")->info("{}: plugin {} can be fetched again", spec_.addr().str(), spec_.uri);
  else
    logger("host.router")
        ->error("{}: cannot fetch plugin {}: {}; the running version keeps serving", spec_.addr().str(),
                spec_.uri, error);
  download_.error = error;
}

void plugin_source::refuse(const std::string& md5, const std::string& why, plugin_failure reason) {
  if (md5 == refused_md5_ && state_ == "refused") return;
  refused_md5_ = md5;
  state_ = "refused";
  error_ = why;
  count_plugin_load_failure(spec_.addr().topic(), reason);
  auto running = pool_.running();
  logger("host.router")
      ->error("{}: new plugin version refused, the running one ({}) keeps serving: {}", spec_.addr().str(),
              running ? running->object().md5() : "remote", why);
}

void plugin_source::swapped(std::chrono::milliseconds pause) {
  proving_ = true;
  state_ = "running";
  error_.clear();
  refused_md5_.clear();
  ++swaps_;
  last_pause_ms_ = pause.count();
  if (!download_.next_file.empty()) {
    // The old version's download is no longer needed (its code lives on in a private copy).
    std::error_code ignored;
    if (!download_.fetched_file.empty() && download_.fetched_file != download_.next_file)
      std::filesystem::remove(download_.fetched_file, ignored);
    download_.fetched_file = std::move(download_.next_file);
    download_.next_file.clear();
  }
}

void plugin_source::rolled_back(const std::string& md5, const std::string& why) {
  refused_md5_ = md5;
  state_ = "refused";
  error_ = why;
  if (!download_.next_file.empty()) {
    // Its download is dropped; the validators stay, so the server's next answer is "not modified".
    std::error_code ignored;
    if (download_.next_file != download_.fetched_file) std::filesystem::remove(download_.next_file, ignored);
    download_.next_file.clear();
  }
  auto running = pool_.running();
  logger("host.router")
      ->error("{}: new plugin version {} refused, the running one ({}) keeps serving: {}", spec_.addr().str(),
              md5, running ? running->object().md5() : "remote", why);
}

std::filesystem::path plugin_source::swap_marker() const {
  return cache_.empty() ? std::filesystem::path()
                        : protocol::swap_marker_path(cache_, spec_.system, spec_.isolate);
}

void plugin_source::prove() {
  proving_ = false;
  if (auto marker = swap_marker(); !marker.empty()) protocol::remove_swap_marker(marker);  // it finished one
  auto running = pool_.running();
  if (!events_ || cache_.empty() || !running) return;
  auto md5 = running->object().md5();
  // The file may have changed since it was loaded: keep a copy only of exactly this version.
  auto source = running_file();
  if (source.empty() || file_md5(source) != md5) return;
  std::error_code ec;
  std::filesystem::create_directories(cache_, ec);
  auto copy = std::filesystem::path(cache_) / (spec_.system + "." + spec_.isolate + "." + md5 + ".so");
  if (!std::filesystem::exists(copy, ec)) std::filesystem::copy_file(source, copy, ec);
  if (ec) {
    logger("host.router")
        ->warn("{}: cannot keep a copy of plugin {}: {}", spec_.addr().str(), md5, ec.message());
    return;
  }
  events_({{"event", "pluginGood"}, {"isolateName", spec_.isolate}, {"md5", md5}, {"path", copy.string()}});
}

nlohmann::json plugin_source::describe() const {
  nlohmann::json plugin = {{"state", state_}, {"swaps", swaps_}, {"lastSwapPauseMs", last_pause_ms_}};
  if (!error_.empty()) {
    plugin["error"] = error_;
    plugin["refusedMd5"] = refused_md5_;
  }
  if (!download_.error.empty()) plugin["fetchError"] = download_.error;
  return plugin;
}

}  // namespace dde::host
