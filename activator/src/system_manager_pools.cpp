// The Isolate Deployer's operations on pools (thesis 3.2.2 through the node protocol): deploy one
// (starting its isolate system first when needed), shut it down, describe every system, migrate,
// RESTART, KILL and a new rate, each a request to the isolate system's /control link. Starting,
// adopting, watching and redeploying the systems themselves is in system_manager.cpp.
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/names.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "system_manager.hpp"

namespace dde::activator {

void system_manager::add_pool(const std::string& system, nlohmann::json body, bool fresh, outcome_fn done) {
  auto it = systems_.find(system);
  if (it == systems_.end()) return done(refused(404, "no isolate system \"" + system + "\" on this node"));
  std::optional<std::uint32_t> wait;
  if (fresh) wait = std::uint32_t(options_.mqs_link_timeout.count());
  request(
      it->second, protocol::control::add_isolate{body, wait},
      [self = shared_from_this(), system, body, done](const protocol::control_response& resp) {
        if (!resp.ok) return done(refused(resp.status, resp.error));
        auto it = self->systems_.find(system);
        if (it != self->systems_.end()) it->second.pools[body["isolateName"].get<std::string>()] = body;
        done(succeeded({{"isolateSystemName", system},
                        {"isolateName", body["isolateName"]},
                        {"instance", it != self->systems_.end() ? it->second.instance : ""}}));
      },
      fresh ? asker::registry : asker::activator);
}

void system_manager::deploy(nlohmann::json body, outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), body = std::move(body),
                              done = std::move(done)]() mutable {
    if (self->stopping_all_) return done(refused(503, "the activator is stopping"));
    auto spec = dde::parse_pool_spec(body);
    if (!spec) return done(refused(400, spec.error()));
    auto mqs = body.value("messageQueuingSystemServer", std::string());
    if (net::parse_ws_url_list(mqs).empty())
      return done(refused(
          400,
          "field \"messageQueuingSystemServer\" must be a ws:// or wss:// URL (or a comma-separated list)"));
    auto name = spec.value().system;
    auto it = self->systems_.find(name);
    if (it != self->systems_.end() && it->second.discarding) {
      // Stopping because an earlier deploy failed: this one starts it afresh once it is gone.
      it->second.after_exit.emplace_back([self, body = std::move(body), done = std::move(done)]() mutable {
        self->deploy(std::move(body), std::move(done));
      });
      return;
    }
    if (it != self->systems_.end() && it->second.mqs != mqs)
      return done(refused(
          409, "isolate system \"" + name + "\" already runs on this node with MQS " + it->second.mqs));
    if (it != self->systems_.end() && it->second.stopping)
      return done(refused(409, "isolate system \"" + name + "\" is shutting down"));
    if (it == self->systems_.end()) {
      record r;
      r.name = name;
      r.mqs = mqs;
      auto& created = self->systems_[name] = std::move(r);
      self->spawn(created);
      if (created.pid < 0) {
        self->systems_.erase(name);
        return done(refused(500, "cannot start a process for isolate system \"" + name + "\""));
      }
    }
    ++self->systems_.at(name).deploying;
    self->when_attached(name, [self, name, body, done](bool ok, std::string error) {
      if (!ok) {
        self->deploy_ended(name, false);
        return done(refused(502, "isolate system \"" + name + "\" did not start: " + error));
      }
      self->add_pool(name, body, true, [self, name, done](outcome o) {
        self->deploy_ended(name, bool(o));
        done(std::move(o));
      });
    });
  });
}

void system_manager::deploy_ended(const std::string& system, bool ok) {
  auto it = systems_.find(system);
  if (it == systems_.end()) return;
  auto& r = it->second;
  --r.deploying;
  if (ok || r.deploying > 0 || !r.pools.empty() || r.stopping) return;
  // A failed deploy leaves nothing behind: a system that runs no pool and waits for no other deploy stops.
  logger("activator")->info("isolate system {} runs no pool after a failed deploy; stopping it", system);
  r.stopping = true;
  r.discarding = true;
  if (r.control)
    request(r, protocol::control::shutdown{}, [](const protocol::control_response&) {});
  else if (r.pid > 0)
    procs_->signal(r.pid, SIGTERM);
}

void system_manager::shutdown(std::string system, std::string isolate, outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), system, isolate, done = std::move(done)] {
    auto it = self->systems_.find(system);
    if (it == self->systems_.end())
      return done(refused(404, "no isolate system \"" + system + "\" on this node"));
    auto& r = it->second;
    if (isolate.empty()) {
      // What it stopped: the system and every pool it ran.
      nlohmann::json pools = nlohmann::json::array();
      for (auto& [name, body] : r.pools) pools.push_back(name);
      auto stopped =
          succeeded({{"stopped", {{"isolateSystemName", system}, {"pools", pools}, {"pid", r.pid}}}});
      r.stopping = true;
      if (!r.control) {
        if (r.pid > 0) self->procs_->signal(r.pid, SIGTERM);
        return done(std::move(stopped));
      }
      self->request(
          r, protocol::control::shutdown{},
          [done, stopped](const protocol::control_response&) { done(stopped); }, asker::registry);
      return;
    }
    if (!r.pools.count(isolate) && r.control == nullptr)
      return done(refused(404, "no pool \"" + isolate + "\" in isolate system \"" + system + "\""));
    self->request(
        r, protocol::control::remove_isolate{isolate},
        [self, system, isolate, done](const protocol::control_response& resp) {
          if (!resp.ok) return done(refused(resp.status, resp.error));
          auto it = self->systems_.find(system);
          if (it != self->systems_.end()) it->second.pools.erase(isolate);
          done(succeeded({{"stopped", {{"isolateSystemName", system}, {"pools", {isolate}}}}}));
        },
        asker::registry);
  });
}

void system_manager::describe(std::optional<protocol::node::describe_scope> only, outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), only = std::move(only), done = std::move(done)] {
    auto result = std::make_shared<nlohmann::json>(nlohmann::json::object());
    auto remaining = std::make_shared<std::size_t>(1);
    auto finish = [result, remaining, done] {
      if (--*remaining == 0) done(succeeded(*result));
    };
    for (auto& [name, r] : self->systems_) {
      std::set<std::string> pools;  // empty: every pool of it
      if (only) {
        auto asked = only->find(name);
        if (asked == only->end()) continue;
        pools = asked->second;
      }
      nlohmann::json facts = {{"state", r.state}, {"restarts", r.restarts}, {"pid", r.pid}};
      if (!r.last_exit.empty()) facts["lastExit"] = r.last_exit;
      if (r.control && r.ops_port > 0) facts["opsPort"] = r.ops_port;
      if (!r.control) {
        // Not attached (starting or restarting): report what it will run.
        (*result)[name] = self->pools_as_deployed(r, facts, pools);
        continue;
      }
      ++*remaining;
      self->request(
          r, protocol::control::describe{pools},
          [self, result, finish, facts, pools, name = name](const protocol::control_response& resp) mutable {
            auto& list = (*result)[name] = nlohmann::json::array();
            if (resp.ok) {
              for (auto& [system, described] : resp.result.items())
                for (auto p : described) {
                  p.update(facts);
                  list.push_back(p);
                }
            } else if (auto it = self->systems_.find(name); it != self->systems_.end()) {
              // Its pools as deployed, each saying why nothing more is known: an empty list read as a
              // system running nothing (a dashboard showed a stopped pool's node green for a poll).
              facts["poolState"] = "not answering: " + resp.error;
              list = self->pools_as_deployed(it->second, facts, pools);
            }
            finish();
          });
    }
    finish();
  });
}

nlohmann::json system_manager::pools_as_deployed(const record& r, const nlohmann::json& facts,
                                                 const std::set<std::string>& only) const {
  auto list = nlohmann::json::array();
  for (auto& [isolate, body] : r.pools) {
    if (!only.empty() && !only.count(isolate)) continue;
    auto spec = dde::parse_pool_spec(body);
    if (!spec) continue;
    auto entry = dde::to_json(spec.value());
    entry.update(facts);
    entry["messageQueuingSystemServer"] = r.mqs;
    list.push_back(entry);
  }
  return list;
}

void system_manager::migrate(std::string system, std::string isolate, nlohmann::json workers_paths,
                             outcome_fn done) {
  boost::asio::post(
      strand_, [self = shared_from_this(), system, isolate, workers_paths, done = std::move(done)] {
        auto it = self->systems_.find(system);
        if (it == self->systems_.end() || !it->second.pools.count(isolate))
          return done(refused(404, "no pool \"" + isolate + "\" in isolate system \"" + system + "\" here"));
        auto new_body = it->second.pools[isolate];
        new_body["workersPaths"] = workers_paths;
        self->replace_pool(system, isolate, std::move(new_body), done);
      });
}

void system_manager::redeploy(nlohmann::json body, outcome_fn done) {
  boost::asio::post(
      strand_, [self = shared_from_this(), body = std::move(body), done = std::move(done)]() mutable {
        auto spec = dde::parse_pool_spec(body);
        if (!spec) return done(refused(400, spec.error()));
        const auto& system = spec.value().system;
        const auto& isolate = spec.value().isolate;
        auto it = self->systems_.find(system);
        if (it == self->systems_.end() || !it->second.pools.count(isolate))
          return done(refused(404, "no pool \"" + isolate + "\" in isolate system \"" + system + "\" here"));
        auto mqs = body.value("messageQueuingSystemServer", it->second.mqs);
        if (mqs != it->second.mqs)
          return done(refused(409, "isolate system \"" + system + "\" runs with MQS " + it->second.mqs +
                                       ", not " + mqs + "; a pool cannot change its system's MQS"));
        body["messageQueuingSystemServer"] = mqs;
        self->replace_pool(system, isolate, std::move(body), done);
      });
}

void system_manager::replace_pool(const std::string& system, const std::string& isolate,
                                  nlohmann::json new_body, outcome_fn done) {
  auto it = systems_.find(system);
  auto old_body = it->second.pools[isolate];
  auto spec = dde::parse_pool_spec(new_body);
  if (!spec) return done(refused(400, spec.error()));
  // Stop the old workers (their messages finish; the rest wait in the broker), then start the new.
  request(
      it->second, protocol::control::remove_isolate{isolate},
      [self = shared_from_this(), system, isolate, old_body, new_body,
       done](const protocol::control_response& resp) {
        if (!resp.ok) return done(refused(resp.status, resp.error));
        self->add_pool(system, new_body, true, [self, system, old_body, done](outcome o) {
          if (o) return done(std::move(o));
          // Put the old pool back, and answer once it runs again.
          self->add_pool(system, old_body, false, [o, done](outcome back) {
            if (back) return done(o);
            done(refused(http_status(o),
                         o.error() + "; starting the old spec again failed too: " + back.error()));
          });
        });
      },
      asker::registry);
}

void system_manager::restart(std::string system, std::string isolate, outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), system, isolate, done = std::move(done)] {
    auto it = self->systems_.find(system);
    if (it == self->systems_.end())
      return done(refused(404, "no isolate system \"" + system + "\" on this node"));
    self->request(
        it->second, protocol::control::restart_isolate{isolate},
        [done](const protocol::control_response& resp) {
          if (!resp.ok) return done(refused(resp.status, resp.error));
          done(succeeded());
        },
        asker::registry);
  });
}

void system_manager::kill(std::string system, std::string isolate, nlohmann::json worker_id,
                          outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), system, isolate, worker_id, done = std::move(done)] {
    auto it = self->systems_.find(system);
    if (it == self->systems_.end())
      return done(refused(404, "no isolate system \"" + system + "\" on this node"));
    protocol::control::kill_isolate req{isolate, std::nullopt};
    if (worker_id.is_string()) req.worker_id = worker_id.get<std::string>();
    self->request(
        it->second, req,
        [done](const protocol::control_response& resp) {
          if (!resp.ok) return done(refused(resp.status, resp.error));
          done(succeeded(resp.result.is_null() ? nlohmann::json::object() : resp.result));
        },
        asker::registry);
  });
}

void system_manager::set_rate(std::string system, std::string isolate, nlohmann::json limits,
                              outcome_fn done) {
  boost::asio::post(strand_, [self = shared_from_this(), system, isolate, limits, done = std::move(done)] {
    auto it = self->systems_.find(system);
    if (it == self->systems_.end())
      return done(refused(404, "no isolate system \"" + system + "\" on this node"));
    auto given = [&](const char* key) {
      return limits.contains(key) ? limits[key] : nlohmann::json(nlohmann::json::value_t::discarded);
    };
    protocol::control::set_rate req{isolate, given("rate"), given("maxInFlight")};
    self->request(
        it->second, req,
        [self, system, isolate, limits, done](const protocol::control_response& resp) {
          if (!resp.ok) return done(refused(resp.status, resp.error));
          // A restarted isolate system keeps the new limits.
          auto it = self->systems_.find(system);
          if (it != self->systems_.end() && it->second.pools.count(isolate)) {
            auto& body = it->second.pools[isolate];
            body.erase("rate");
            body.erase("maxInFlight");
            body.update(limits);
          }
          done(succeeded());
        },
        asker::registry);
  });
}

}  // namespace dde::activator
