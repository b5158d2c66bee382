#include "plugin_fetcher.hpp"

#include <map>

#include "dde/core/daemon.hpp"
#include "dde/net/http_client.hpp"
#include "runtime.hpp"

namespace dde::host {
namespace fs = std::filesystem;

namespace {

/// "HTTP 404: <the first line of the body>", enough to act on without flooding the log.
std::string status_error(const net::http_result& r) {
  std::string text = "HTTP " + std::to_string(r.status);
  auto line = r.body.substr(0, r.body.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  if (!line.empty()) text += ": " + line;
  return text;
}

fetch_result failure(std::string why) {
  fetch_result r;
  r.what = fetch_result::kind::failed;
  r.error = std::move(why);
  return r;
}

}  // namespace

fetch_result fetch_plugin(const std::string& uri, const std::string& name, const fetch_validators& known,
                          const fetch_options& options, const std::atomic<bool>* cancel) {
  if (!net::parse_http_url(uri)) return failure("\"" + uri + "\" is not a valid http:// or https:// URL");
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) return failure("cannot create the plugin cache " + options.dir.string() + ": " + ec.message());
  std::map<std::string, std::string> headers;
  if (!known.etag.empty())
    headers["If-None-Match"] = known.etag;
  else if (!known.last_modified.empty())
    headers["If-Modified-Since"] = known.last_modified;
  net::http_options http;
  http.timeout = options.timeout;
  http.ca_file = options.ca_file;
  http.max_body = options.max_size;
  http.cancel = cancel;
  http.body_file = options.dir / (name + ".download");
  auto r = net::http_fetch("GET", uri, {}, headers, http);
  if (!r.answered()) return failure(r.error);
  if (r.status == 304) {
    fetch_result same;
    same.what = fetch_result::kind::not_modified;
    return same;
  }
  if (r.status != 200) return failure(status_error(r));
  fetch_result out;
  out.what = fetch_result::kind::fetched;
  out.md5 = file_md5(http.body_file);
  if (out.md5.empty()) return failure("cannot read the downloaded file " + http.body_file.string());
  // Named after its content: a version is never overwritten by another while it may be loaded.
  out.file = options.dir / (name + "." + out.md5 + ".so");
  fs::rename(http.body_file, out.file, ec);
  if (ec) return failure("cannot keep the download as " + out.file.string() + ": " + ec.message());
  if (auto it = r.headers.find("etag"); it != r.headers.end()) out.validators.etag = it->second;
  if (auto it = r.headers.find("last-modified"); it != r.headers.end())
    out.validators.last_modified = it->second;
  return out;
}

plugin_fetcher::plugin_fetcher(fetch_options options) : state_(std::make_shared<state>()) {
  state_->options = std::move(options);
  thread_ = std::thread([s = state_] { run(s); });
}

plugin_fetcher::~plugin_fetcher() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    state_->jobs.clear();
  }
  state_->cancel = true;
  state_->wake.notify_all();
  // The last owner may be a `done` callback on the fetcher's own thread: it ends on its own then.
  if (thread_.get_id() == std::this_thread::get_id())
    thread_.detach();
  else
    thread_.join();
}

void plugin_fetcher::fetch(std::string uri, std::string name, fetch_validators known,
                           std::function<void(fetch_result)> done) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->stopping) return;
    state_->jobs.push_back({std::move(uri), std::move(name), std::move(known), std::move(done)});
  }
  state_->wake.notify_one();
}

void plugin_fetcher::run(const std::shared_ptr<state>& s) {
  dde::name_this_thread("host-fetcher");
  for (;;) {
    job next;
    {
      std::unique_lock lock(s->mutex);
      s->wake.wait(lock, [&] { return s->stopping || !s->jobs.empty(); });
      if (s->stopping) return;
      next = std::move(s->jobs.front());
      s->jobs.pop_front();
    }
    auto result = fetch_plugin(next.uri, next.name, next.known, s->options, &s->cancel);
    if (s->cancel) return;
    next.done(std::move(result));
  }
}

}  // namespace dde::host
