#include "controller.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "router.hpp"
#include "runtime.hpp"
#include "top_level.hpp"

namespace dde::host {
namespace {
constexpr std::chrono::seconds drain_timeout{10};
}

controller::controller(boost::asio::io_context& io, std::shared_ptr<top_level> top, std::string system)
    : io_(io), strand_(boost::asio::make_strand(io)), top_(std::move(top)), system_(std::move(system)) {}

void controller::add_pool(pool_spec spec, op_done done,
                          std::optional<std::chrono::milliseconds> link_timeout) {
  boost::asio::post(strand_, [self = shared_from_this(), spec = std::move(spec), done = std::move(done),
                              link_timeout]() mutable {
    if (self->stopped_)
      return done(refused(refusal::bad_request, "isolate system " + self->system_ + " is stopping"));
    if (spec.system != self->system_)
      return done(refused(refusal::bad_request, "pool is for isolate system \"" + spec.system +
                                                    "\" but this is \"" + self->system_ + "\""));
    if (self->routers_.count(spec.isolate) || self->starting_.count(spec.isolate))
      return done(refused(refusal::conflict,
                          "pool \"" + spec.addr().str() + "\" is already deployed here; shut it down first"));
    for (auto* uri : {&spec.uri, &spec.router_uri}) {
      if (uri->empty()) continue;
      if (auto why = check_plugin_allowed(*uri, self->plugin_allow_); !why.empty()) {
        logger("host")->error("cannot deploy {}: {}", spec.addr().str(), why);
        count_plugin_load_failure(spec.system + "." + spec.isolate, plugin_failure::not_allowed);
        return done(refused(refusal::bad_request, why));
      }
    }
    auto r = std::make_shared<router>(self->io_, self->top_, spec);
    r->set_events(self->events_, self->plugin_cache_);
    r->set_fetch_options(self->fetch_options_);
    self->starting_[spec.isolate] = {r, std::move(done)};
    if (!link_timeout) return self->prepare_pool(spec.isolate);
    // A fresh deploy: only once the MQS link is up, so that a deploy to an MQS nobody can reach is
    // an error rather than a pool that shows "running" and never gets a message.
    self->top_->when_linked(*link_timeout, [weak = std::weak_ptr<controller>(self), isolate = spec.isolate,
                                            what = spec.addr().str()](std::string error) {
      auto c = weak.lock();
      if (!c) return;
      boost::asio::post(c->strand_, [c, isolate, what, error] {
        if (error.empty()) return c->prepare_pool(isolate);
        auto it = c->starting_.find(isolate);
        if (it == c->starting_.end()) return;  // the isolate system stopped meanwhile
        auto done = std::move(it->second.done);
        c->starting_.erase(it);
        logger("host")->error("cannot deploy {}: {}", what, error);
        done(refused(refusal::gateway_timeout, "cannot deploy " + what + ": " + error));
      });
    });
  });
}

void controller::prepare_pool(const std::string& isolate) {
  auto it = starting_.find(isolate);
  if (it == starting_.end()) return;
  // Weak: the callback may wait inside the router's own fetcher.
  it->second.pool->prepare(
      [weak = std::weak_ptr<controller>(shared_from_this()), isolate](result<bool> prepared) {
        if (auto c = weak.lock())
          boost::asio::post(c->strand_, [c, isolate, prepared = std::move(prepared)]() mutable {
            c->start_pool(isolate, std::move(prepared));
          });
      });
}

void controller::start_pool(const std::string& isolate, result<bool> prepared) {
  auto it = starting_.find(isolate);
  if (it == starting_.end()) return;  // the isolate system stopped meanwhile
  auto [r, done] = std::move(it->second);
  starting_.erase(it);
  auto started = prepared ? r->start() : std::move(prepared);
  if (!started) {
    logger("host")->error("cannot deploy {}: {}", r->spec().addr().str(), started.error());
    count_plugin_load_failure(r->spec().system + "." + r->spec().isolate, started.code<plugin_failure>());
    return done(refused(refusal::bad_request, started.error()));
  }
  routers_[isolate] = std::move(r);
  done(true);
}

void controller::set_fetch_options(fetch_options options) { fetch_options_ = std::move(options); }

void controller::set_events(std::function<void(nlohmann::json)> events, std::string plugin_cache) {
  events_ = std::move(events);
  plugin_cache_ = std::move(plugin_cache);
}

namespace {
op_result no_pool(const std::string& isolate, const std::string& system) {
  return refused(refusal::not_found, "no pool \"" + isolate + "\" in isolate system " + system);
}
}  // namespace

void controller::remove_pool(const std::string& isolate, op_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), isolate, done = std::move(done)]() mutable {
    auto it = self->routers_.find(isolate);
    if (it == self->routers_.end()) return done(no_pool(isolate, self->system_));
    auto r = it->second;
    self->routers_.erase(it);
    r->shutdown(drain_timeout, [r, done = std::move(done)] { done(true); });
  });
}

void controller::restart_pool(const std::string& isolate, op_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), isolate, done = std::move(done)]() mutable {
    auto it = self->routers_.find(isolate);
    if (it == self->routers_.end()) return done(no_pool(isolate, self->system_));
    it->second->restart_workers(std::move(done));
  });
}

void controller::kill_workers(const std::string& isolate, std::string worker_id, kill_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), isolate, worker_id = std::move(worker_id),
                              done = std::move(done)]() mutable {
    auto it = self->routers_.find(isolate);
    if (it == self->routers_.end()) return done(kill_result::failure_of(no_pool(isolate, self->system_)));
    it->second->kill_workers(std::move(worker_id), std::move(done));
  });
}

void controller::set_rate(const std::string& isolate, std::size_t messages, std::chrono::milliseconds per,
                          std::size_t max_in_flight, op_done done) {
  boost::asio::post(strand_, [self = shared_from_this(), isolate, messages, per, max_in_flight,
                              done = std::move(done)]() mutable {
    auto it = self->routers_.find(isolate);
    if (it == self->routers_.end()) return done(no_pool(isolate, self->system_));
    it->second->set_rate(messages, per, max_in_flight, std::move(done));
  });
}

void controller::describe(const std::set<std::string>& only, std::function<void(nlohmann::json)> fn) {
  top_->read_stats([self = shared_from_this(), only, fn = std::move(fn)](const top_level_stats& link) {
    boost::asio::post(self->strand_, [self, only, fn, linked = link.linked, error = link.link_error] {
      std::vector<std::shared_ptr<router>> asked;
      for (auto& [name, r] : self->routers_)
        if (only.empty() || only.count(name)) asked.push_back(r);
      auto pools = std::make_shared<nlohmann::json>(nlohmann::json::array());
      auto remaining = std::make_shared<std::size_t>(asked.size());
      auto system = self->system_;
      if (*remaining == 0) return fn({{system, *pools}});
      auto strand = self->strand_;
      for (auto& r : asked) {
        r->describe([strand, pools, remaining, fn, system, linked, error](nlohmann::json j) {
          boost::asio::post(
              strand, [pools, remaining, fn, system, linked, error, j = std::move(j)]() mutable {
                // Not connected to its MQS: a running pool gets no message; say so where its state is read.
                j["mqsLink"] = linked ? nlohmann::json{{"linked", true}}
                                      : nlohmann::json{{"linked", false}, {"error", error}};
                if (!linked && j.value("poolState", std::string()) == "running")
                  j["poolState"] = "not connected: " + error;
                pools->push_back(std::move(j));
                if (--*remaining != 0) return;
                // Routers answer in whatever order they finish; readers get the pools sorted by id.
                std::sort(pools->begin(), pools->end(), [](const nlohmann::json& a, const nlohmann::json& b) {
                  return a.value("id", std::string()) < b.value("id", std::string());
                });
                fn({{system, *pools}});
              });
        });
      }
    });
  });
}

void controller::shutdown(std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    self->stopped_ = true;
    // Pools still downloading their plugin never start (their download is abandoned).
    auto starting = std::move(self->starting_);
    self->starting_.clear();
    for (auto& [isolate, s] : starting)
      s.done(refused(refusal::bad_request, "isolate system " + self->system_ + " is stopping"));
    starting.clear();
    auto routers = std::move(self->routers_);
    self->routers_.clear();
    if (routers.empty()) return done();
    auto remaining = std::make_shared<std::size_t>(routers.size());
    for (auto& entry : routers) {
      auto router = entry.second;
      router->shutdown(drain_timeout, [router, remaining, done] {
        if (--*remaining == 0) done();
      });
    }
  });
}

}  // namespace dde::host
