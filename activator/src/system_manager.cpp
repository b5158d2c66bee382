// The activator's isolate systems as processes: spawns each (or adopts one that outlived an earlier
// activator), holds its /control link, notices it end (SIGCHLD, the link dropping), redeploys its
// pools after a crash, and stops them all. What is asked of their pools is in system_manager_pools.cpp.
#include "system_manager.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <boost/asio/post.hpp>

#include "dde/core/metrics.hpp"
#include "dde/log.hpp"
#include "dde/names.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/swap_marker.hpp"

namespace dde::activator {
namespace {

/// A request that got no answer from the isolate system, answered for it.
protocol::control_response failed(int status, std::string error) {
  return {0, false, nullptr, status, std::move(error)};
}

metric_cell& control_clients() {
  return metrics_registry::process().gauge("dde_activator_websocket_clients",
                                           "Open WebSocket connections, by endpoint.",
                                           {{"endpoint", "control"}});
}

std::shared_ptr<spdlog::logger> log() { return logger("activator"); }

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status));
  return "ended";
}

}  // namespace

system_manager::system_manager(boost::asio::io_context& io, manager_options options,
                               std::shared_ptr<process_table> processes)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      options_(std::move(options)),
      procs_(processes ? std::move(processes) : os_processes()),
      sigchld_(strand_, SIGCHLD) {}

void system_manager::child_exited(pid_t pid, int status) {
  boost::asio::post(strand_, [self = shared_from_this(), pid, status] { self->on_child_exit(pid, status); });
}

void system_manager::start() {
  boost::asio::post(strand_, [self = shared_from_this()] { self->wait_children(); });
}

void system_manager::wait_children() {
  sigchld_.async_wait([self = shared_from_this()](boost::system::error_code ec, int) {
    if (ec) return;
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) self->on_child_exit(pid, status);
    self->wait_children();
  });
}

void system_manager::spawn(record& r) {
  changed();
  r.instance = new_uuid();
  r.started = std::chrono::steady_clock::now();
  r.own_child = true;
  std::vector<std::string> args = {options_.host_binary,
                                   "--name",
                                   r.name,
                                   "--mqs",
                                   r.mqs,
                                   "--control",
                                   options_.control_url,
                                   "--instance",
                                   r.instance,
                                   "--orphan-timeout-ms",
                                   std::to_string(options_.orphan_timeout.count()),
                                   "--threads",
                                   std::to_string(options_.host_threads),
                                   "--thread-lag-us",
                                   std::to_string(options_.host_thread_lag.count()),
                                   "--scheduling",
                                   options_.host_scheduling,
                                   "--plugin-cache",
                                   plugin_cache(),
                                   "--ops-port",
                                   "0",
                                   "--log-level",
                                   options_.log_level};
  for (auto& allow : options_.plugin_allow) {
    args.emplace_back("--plugin-allow");
    args.push_back(allow);
  }
  std::string log_path = options_.log_dir + "/" + r.name + ".log";
  pid_t pid = procs_->spawn(args, log_path);
  if (pid < 0) {
    log()->error("cannot start isolate system {}: fork failed", r.name);
    r.state = "failed";
    return;
  }
  r.pid = pid;
  log()->info("started isolate system {} (pid {}, instance {}, MQS {}), log {}", r.name, pid, r.instance,
              r.mqs, log_path);
  // A child that never says hello is given up on.
  r.timer = std::make_shared<boost::asio::steady_timer>(strand_, options_.start_timeout);
  r.timer->async_wait([self = shared_from_this(), name = r.name, pid](boost::system::error_code ec) {
    if (ec) return;
    auto it = self->systems_.find(name);
    if (it == self->systems_.end() || it->second.pid != pid || it->second.control) return;
    auto waiting = std::move(it->second.waiting);
    it->second.waiting.clear();
    for (auto& w : waiting)
      w(false, "no hello within " + std::to_string(self->options_.start_timeout.count()) + " ms");
  });
}

void system_manager::when_attached(const std::string& system, std::function<void(bool, std::string)> fn) {
  auto it = systems_.find(system);
  if (it == systems_.end()) return fn(false, "no such isolate system");
  if (it->second.control) return fn(true, {});
  it->second.waiting.push_back(std::move(fn));
}

void system_manager::request(record& r, protocol::control_request req,
                             std::function<void(const protocol::control_response&)> on_response, asker by) {
  if (!r.control) return on_response(failed(503, "isolate system " + r.name + " is " + r.state));
  std::uint64_t id = next_request_++;
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, options_.request_timeout);
  const bool quiet = by == asker::registry || std::holds_alternative<protocol::control::describe>(req);
  pending_[id] = {std::move(on_response), timer, r.name, quiet};
  timer->async_wait([self = shared_from_this(), id, name = r.name](boost::system::error_code ec) {
    if (ec) return;
    auto it = self->pending_.find(id);
    if (it == self->pending_.end()) return;
    auto fn = std::move(it->second.on_response);
    self->pending_.erase(it);
    fn(failed(504, "isolate system " + name + " did not answer in time"));
  });
  r.control->send(protocol::encode(protocol::control_request_frame{id, std::move(req)}), false);
}

void system_manager::on_open(const std::shared_ptr<net::ws_connection>&) { control_clients().add(1); }

void system_manager::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, data = std::move(data)] {
    auto frame = protocol::parse_host_frame(data);
    if (!frame) {
      log()->warn("ignoring a bad frame from an isolate system ({}): {}", frame.error(), data.substr(0, 200));
      return;
    }
    // A hello (a system attached) or an event (a hot swap, a pool that scaled itself) changes it.
    if (!std::holds_alternative<protocol::control_response>(frame.value())) self->changed();
    if (auto* hello = std::get_if<protocol::control_hello>(&frame.value()))
      return self->on_hello(conn, *hello);
    if (auto* event = std::get_if<protocol::control_event>(&frame.value()))
      return self->on_event(conn, event->fields);
    auto& response = std::get<protocol::control_response>(frame.value());
    auto it = self->pending_.find(response.id);
    if (it == self->pending_.end()) return self->changed();  // answered after its timeout: it may have acted
    if (!it->second.quiet) self->changed();
    it->second.timer->cancel();
    auto fn = std::move(it->second.on_response);
    self->pending_.erase(it);
    fn(response);
  });
}

void system_manager::on_hello(const std::shared_ptr<net::ws_connection>& conn,
                              const protocol::control_hello& hello) {
  const auto& name = hello.system;
  const auto& instance = hello.instance;
  if (!valid_name(name)) {
    conn->close("bad hello");
    return;
  }
  auto it = systems_.find(name);
  if (it == systems_.end()) {
    // A system started by an earlier activator on this node: adopt it and learn its pools.
    record r;
    r.name = name;
    r.mqs = hello.mqs;
    r.instance = instance;
    r.pid = static_cast<pid_t>(hello.pid);
    r.ops_port = hello.ops_port;
    r.own_child = false;
    r.state = "running";
    r.control = conn;
    r.started = std::chrono::steady_clock::now();
    auto& adopted = systems_[name] = std::move(r);
    log()->info("adopted isolate system {} (pid {}) that was running before this activator", name,
                adopted.pid);
    request(adopted, protocol::control::describe{},
            [self = shared_from_this(), name](const protocol::control_response& resp) {
              auto it = self->systems_.find(name);
              if (it == self->systems_.end() || !resp.ok) return;
              for (auto& [system, pools] : resp.result.items())
                for (auto& p : pools) {
                  auto body = deploy_body_of_description(system, p);
                  it->second.pools[body["isolateName"].get<std::string>()] = body;
                }
            });
    return;
  }
  auto& r = it->second;
  if (r.instance != instance) {
    log()->warn("a second instance of {} (pid {}) attached; asking it to stop", name, hello.pid);
    conn->send(protocol::encode(protocol::control_request_frame{0, protocol::control::shutdown{}}), false);
    return;
  }
  r.control = conn;
  r.state = "running";
  r.ops_port = hello.ops_port;
  if (r.timer) r.timer->cancel();
  auto waiting = std::move(r.waiting);
  r.waiting.clear();
  for (auto& w : waiting) w(true, {});
}

void system_manager::on_event(const std::shared_ptr<net::ws_connection>& conn, const nlohmann::json& event) {
  for (auto& [name, r] : systems_) {
    if (r.control != conn) continue;
    auto isolate = event.value("isolateName", std::string());
    auto md5 = event.value("md5", std::string());
    auto& v = r.versions[isolate];
    auto what = event.value("event", std::string());
    if (what == "pluginSwapping") {
      v.swapping_md5 = md5;
    } else if (what == "pluginGood") {
      v.good_md5 = md5;
      v.good_copy = event.value("path", std::string());
      if (v.swapping_md5 == md5) v.swapping_md5.clear();
    }
    return;
  }
}

void system_manager::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  control_clients().add(-1);
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    for (auto& [name, r] : self->systems_) {
      if (r.control != conn) continue;
      r.control.reset();
      log()->info("control link of {} closed ({})", name, reason);
      // Requests still unanswered on that link get their answer now: a system told to stop may
      // close its link before its "ok" is written; for any other the link is simply gone.
      std::vector<std::function<void(const protocol::control_response&)>> unanswered;
      for (auto it = self->pending_.begin(); it != self->pending_.end();) {
        if (it->second.system != name) {
          ++it;
          continue;
        }
        it->second.timer->cancel();
        unanswered.push_back(std::move(it->second.on_response));
        it = self->pending_.erase(it);
      }
      for (auto& fn : unanswered)
        fn(r.stopping
               ? protocol::control_response{0, true, nlohmann::json::object(), 200, {}}
               : failed(503, fmt::format("isolate system {} closed its control link ({})", name, reason)));
      // Our own children are reaped through SIGCHLD; an adopted one we can only watch. Its socket
      // closes a moment before the process is gone, so look for a while.
      if (!r.own_child) self->watch_adopted(name, r.pid, 50);
      return;
    }
  });
}

void system_manager::watch_adopted(const std::string& name, pid_t pid, int checks_left) {
  auto it = systems_.find(name);
  if (it == systems_.end() || it->second.pid != pid || it->second.control) return;  // gone or back
  if (!procs_->alive(pid)) return on_lost(it->second, "is gone (pid " + std::to_string(pid) + ")");
  if (checks_left <= 0) return;
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, std::chrono::milliseconds(100));
  timer->async_wait([self = shared_from_this(), timer, name, pid, checks_left](boost::system::error_code ec) {
    if (!ec) self->watch_adopted(name, pid, checks_left - 1);
  });
}

void system_manager::on_child_exit(pid_t pid, int status) {
  for (auto& [name, r] : systems_) {
    if (r.pid != pid) continue;
    on_lost(r, exit_text(status));
    return;
  }
}

void system_manager::on_lost(record& r, const std::string& why) {
  changed();
  std::string name = r.name;
  r.pid = -1;
  r.control.reset();
  r.last_exit = why;
  bool never_ran = r.state == "starting";
  auto waiting = std::move(r.waiting);
  r.waiting.clear();
  for (auto& w : waiting) w(false, "the process " + why);
  if (r.stopping || stopping_all_ || never_ran) {
    log()->info("isolate system {} {}", name, why);
    auto after_exit = std::move(r.after_exit);
    systems_.erase(name);
    for (auto& fn : after_exit) fn();
    return;
  }
  auto uptime = std::chrono::steady_clock::now() - r.started;
  r.backoff = (r.backoff.count() == 0 || uptime > std::chrono::seconds(30))
                  ? options_.restart_backoff
                  : std::min(r.backoff * 2, std::chrono::milliseconds(10000));
  ++r.restarts;
  metrics_registry::process()
      .counter("dde_activator_system_restarts_total", "Isolate systems restarted after they ended unasked.",
               {{"system", name}})
      .add();
  r.state = "restarting";
  log()->error("isolate system {} {}; restarting it in {} ms (restart {})", name, why, r.backoff.count(),
               r.restarts);
  r.timer = std::make_shared<boost::asio::steady_timer>(strand_, r.backoff);
  r.timer->async_wait([self = shared_from_this(), name](boost::system::error_code ec) {
    if (ec) return;
    auto it = self->systems_.find(name);
    if (it == self->systems_.end() || it->second.stopping) return;
    self->spawn(it->second);
    self->when_attached(name, [self, name](bool ok, std::string error) {
      if (ok) return self->redeploy(name);
      log()->error("restarted isolate system {} did not attach: {}", name, error);
    });
  });
}

void system_manager::redeploy(const std::string& system) {
  auto it = systems_.find(system);
  if (it == systems_.end()) return;
  for (auto& [isolate, pool_body] : it->second.pools) {
    auto body = pool_body;
    // The swap may have begun too shortly before the crash for its event to leave the process: its
    // marker file says which version it was (dde/protocol/swap_marker.hpp).
    auto marker = protocol::swap_marker_path(plugin_cache(), system, isolate);
    auto marked = protocol::read_swap_marker(marker);
    protocol::remove_swap_marker(marker);
    auto& versions = it->second.versions;
    auto v = marked.empty() ? versions.find(isolate) : versions.try_emplace(isolate).first;
    if (!marked.empty() && marked != v->second.good_md5) v->second.swapping_md5 = marked;
    if (v != it->second.versions.end() && !v->second.swapping_md5.empty() && !v->second.good_copy.empty()) {
      // A new version was being swapped in when the process died, before it finished a message:
      // start from the last version that worked and refuse that one (the uri is still watched).
      log()->error("{}/{}: plugin version {} crashed the isolate system; falling back to {}", system, isolate,
                   v->second.swapping_md5, v->second.good_md5);
      body["lastGoodCopy"] = v->second.good_copy;
      body["crashedMd5"] = v->second.swapping_md5;
      body["crashReason"] = "the process " + it->second.last_exit;
    }
    add_pool(system, body, false, [system, isolate = isolate](outcome o) {
      if (o)
        log()->info("redeployed {}/{}", system, isolate);
      else
        log()->error("cannot redeploy {}/{}: {}", system, isolate, o.error());
    });
  }
}

void system_manager::stop_all(std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    self->stopping_all_ = true;
    std::vector<pid_t> pids;
    for (auto& [name, r] : self->systems_) {
      r.stopping = true;
      if (r.timer) r.timer->cancel();
      if (r.pid > 0) pids.push_back(r.pid);
      if (r.pid > 0) self->procs_->signal(r.pid, SIGTERM);
    }
    // Give them time to drain, then make sure.
    auto timer = std::make_shared<boost::asio::steady_timer>(self->strand_, std::chrono::seconds(25));
    auto poll = std::make_shared<std::function<void()>>();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(25);
    *poll = [self, pids, done, timer, poll, deadline] {
      bool any = false;
      for (auto pid : pids) any = any || self->procs_->alive(pid);
      if (!any || std::chrono::steady_clock::now() > deadline) {
        for (auto pid : pids)
          if (self->procs_->alive(pid)) self->procs_->signal(pid, SIGKILL);
        // This lambda is *poll: letting it go destroys its captures (done included), so copy it out first.
        auto finish = done;
        *poll = nullptr;
        return finish();
      }
      timer->expires_after(std::chrono::milliseconds(50));
      timer->async_wait([poll](boost::system::error_code) {
        if (*poll) (*poll)();
      });
    };
    (*poll)();
  });
}

}  // namespace dde::activator
