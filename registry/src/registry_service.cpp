#include "dde/registry/registry_service.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <optional>

#include "access_control.hpp"
#include "dashboard.hpp"
#include "dde/log.hpp"
#include "dde/net/target.hpp"
#include "dde/net/ws.hpp"
#include "mqs_http_client.hpp"
#include "node_endpoint.hpp"
#include "node_watch.hpp"
#include "registry_role.hpp"
#include "rest_api.hpp"

namespace dde::registry {
namespace {

/// A node_link over one WebSocket connection.
class ws_link : public node_link {
 public:
  explicit ws_link(std::shared_ptr<net::ws_connection> conn) : conn_(std::move(conn)) {}
  void send(std::string text) override { conn_->send(std::move(text), false); }
  void close(std::string reason) override { conn_->close(std::move(reason)); }

 private:
  std::shared_ptr<net::ws_connection> conn_;
};

net::http_response to_http(const rest_reply& reply) {
  net::http_response out;
  out.status = reply.status;
  // Paths echoed in errors may hold bytes that are not UTF-8: replace them rather than throw.
  out.body = reply.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out.headers = reply.headers;
  return out;
}

std::unique_ptr<state_store> open_store(const registry_config& cfg) {
  if (!cfg.state_url.empty()) return open_postgres_store(cfg.state_url, cfg.advertise);
  if (!cfg.state_file.empty()) return open_sqlite_store(cfg.state_file);
  return nullptr;
}

/// What a standby still answers beside its health: its figures and the dashboard's files.
bool standby_serves(const std::string& method, std::string_view path) {
  if (method != "GET" && method != "HEAD") return false;
  return path == "/metrics" || path == "/" || path.ends_with(".html") || path.ends_with(".js") ||
         path.ends_with(".css");
}

node_watch::options watch_options(const registry_config& cfg, state_store* store) {
  node_watch::options o{cfg.heartbeat, cfg.heartbeat_timeout};
  o.store = store;
  o.restore_grace = cfg.restore_grace;
  return o;
}

}  // namespace

struct registry_service::impl : std::enable_shared_from_this<impl> {
  impl(boost::asio::io_context& io, registry_config config)
      : cfg(std::move(config)),
        strand(boost::asio::make_strand(io)),
        nodes(node_table::options{cfg.request_timeout}),
        endpoint(nodes),
        api(nodes),
        store(open_store(cfg)),
        watch(nodes, watch_options(cfg, store.get())),
        role(store.get(), {[this] { take_over(); }, [this](const std::string& why) { step_down(why); }}),
        timer(strand),
        heartbeat_timer(strand),
        role_timer(strand),
        board(
            nodes, [this](std::function<void()> fn) { post(std::move(fn)); },
            [this](std::chrono::milliseconds delay, std::function<void()> fn) {
              schedule(delay, std::move(fn));
            },
            cfg.dashboard_interval) {
    api.set_failover_status([this] { return watch.status(); });
    api.set_role_status([this] { return role.status(); });
    board.set_role_status([this] { return role.status(); });
    // The dead-letter endpoints reach MQS processes over HTTP on mqs_http's thread; answers come back here.
    api.set_mqs_http([this](mqs_call call, std::function<void(mqs_reply)> done) {
      mqs_http.call(std::move(call), [this, done = std::move(done)](mqs_reply r) {
        post([done, r = std::move(r)] { done(r); });
      });
    });
    net::server_options options;
    options.host = cfg.listen;
    options.port = cfg.port;
    options.max_http_body = cfg.max_body;
    options.max_ws_message = 16 * 1024 * 1024;
    options.authorize =
        make_access_guard({cfg.admin_token, cfg.read_token, cfg.cluster_secret}, logger("registry.auth"));
    options.tls = cfg.tls;
    server = net::server::create(io, options);
  }

  /// Runs `work` on the strand, then re-arms the deadline timer: every change to the pending
  /// requests happens inside such a call. Exceptions stop here, logged.
  template <class F>
  void on_strand(F work) {
    boost::asio::post(strand, [self = shared_from_this(), work = std::move(work)]() mutable {
      try {
        work(*self);
      } catch (const std::exception& e) {
        logger("registry")->error("internal error: {}", e.what());
      }
      self->rearm();
    });
  }

  void rearm() {
    auto next = nodes.next_deadline();
    if (next == armed) return;
    armed = next;
    if (!next) {
      timer.cancel();
      return;
    }
    timer.expires_at(*next);
    timer.async_wait([weak = weak_from_this(), at = *next](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self || self->armed != at) return;
      self->armed.reset();
      self->nodes.expire();
      self->rearm();
    });
  }

  /// Runs `fn` on the strand while the service lives (from any thread).
  void post(std::function<void()> fn) {
    boost::asio::post(strand, [weak = weak_from_this(), fn = std::move(fn)] {
      if (auto self = weak.lock()) self->on_strand([fn](impl&) { fn(); });
    });
  }

  void schedule(std::chrono::milliseconds delay, std::function<void()> fn) {
    auto t = std::make_shared<boost::asio::steady_timer>(strand, delay);
    t->async_wait([t, weak = weak_from_this(), fn = std::move(fn)](const boost::system::error_code& ec) {
      if (auto self = weak.lock(); self && !ec) self->on_strand([fn](impl&) { fn(); });
    });
  }

  void handle_http(const net::http_request& req, std::function<void(net::http_response)> respond) {
    rest_request in{req.method, req.target, req.body, req.remote};
    on_strand([req, in = std::move(in), respond](impl& self) {
      try {
        if (!self.role.active()) return self.answer_standby(req, respond);
        // The dashboard's page, /metrics and /health; everything else is the REST API.
        if (self.board.handle(req, respond)) return;
        self.api.handle(in, [respond](rest_reply reply) { respond(to_http(reply)); });
      } catch (const std::exception& e) {
        logger("registry")->error("{} {} failed: {}", in.method, in.target, e.what());
        respond(to_http(error_reply(500, std::string("internal error: ") + e.what())));
      }
    });
  }

  /// A standby answers 503 naming the active registry, but says whether it lives (/health: 503 with
  /// its role, for load balancers) and serves its metrics and the dashboard's files.
  void answer_standby(const net::http_request& req, const std::function<void(net::http_response)>& respond) {
    std::string path(net::target_path(req.target));
    if (path == "/health" || path == "/registry/health") {
      auto body = role.status();
      body["status"] = "standby";
      body["error"] = role.standby_reason();
      return respond(to_http({503, std::move(body), {}}));
    }
    if (standby_serves(req.method, path) && board.handle(req, respond)) return;
    respond(to_http(error_reply(503, role.standby_reason())));
  }

  /// Took the store's lock (or started with a store of its own): the remembered nodes are watched
  /// before any node registers (it is then "back", not new).
  void take_over() {
    if (!store) return;
    auto n = watch.restore();
    logger("registry")->info("{}: {} node(s) remembered", store->name(), n);
  }

  /// Lost the store's lock: another registry may lead by now. The nodes go to it.
  void step_down(const std::string& why) {
    endpoint.close_all("this registry stepped down (" + why + "); the active registry takes the nodes");
    watch.clear();
  }

  /// Runs `job` on the strand every `interval` (on `timer`, a member) while the service lives.
  void every(boost::asio::steady_timer& timer, std::chrono::milliseconds interval, void (*job)(impl&)) {
    timer.expires_after(interval);
    timer.async_wait([weak = weak_from_this(), &timer, interval, job](const boost::system::error_code& ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->on_strand([&timer, interval, job](impl& s) {
        job(s);
        s.every(timer, interval, job);
      });
    });
  }

  /// Every heartbeat the node watch pings, refreshes, and fails over lost nodes; on a shared store,
  /// every --standby-poll-ms the registry takes the lead or checks it still holds it.
  void start_timers() {
    if (cfg.heartbeat.count() > 0)
      every(heartbeat_timer, cfg.heartbeat, [](impl& s) {
        if (s.role.active()) s.watch.tick();
      });
    if (role.polls()) every(role_timer, cfg.standby_poll, [](impl& s) { s.role.poll(); });
  }

  registry_config cfg;
  boost::asio::strand<boost::asio::io_context::executor_type> strand;
  node_table nodes;
  node_endpoint endpoint;
  rest_api api;
  std::unique_ptr<state_store> store;  ///< outlives watch, which writes to it
  node_watch watch;
  registry_role role;
  boost::asio::steady_timer timer;
  boost::asio::steady_timer heartbeat_timer;
  boost::asio::steady_timer role_timer;
  std::optional<node_table::clock::time_point> armed;
  std::unique_ptr<net::server> server;
  dashboard board;
  /// Last: its thread (which posts to the strand) is joined before the other members go.
  mqs_http_client mqs_http{cfg.cluster_secret};

  class socket_handler;
  class live_handler;
};

/// Hands the events of /registry connections to the service's strand. Holds the service weakly:
/// the server (owned by the service) holds this handler.
class registry_service::impl::socket_handler : public net::ws_handler {
 public:
  explicit socket_handler(std::weak_ptr<impl> service) : service_(std::move(service)) {}

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    if (auto s = service_.lock())
      s->on_strand([conn](impl& self) {
        if (!self.role.active()) {
          // The node's activator goes on to the next registry of its --registry list.
          conn->send(protocol::encode(protocol::error_frame{self.role.standby_reason()}), false);
          return conn->close("standby");
        }
        self.endpoint.on_open(conn->id(), conn->remote(), std::make_shared<ws_link>(conn));
      });
  }
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override {
    if (auto s = service_.lock())
      s->on_strand([id = conn->id(), data = std::move(data), binary](impl& self) {
        if (binary)
          self.endpoint.on_binary(id);
        else
          self.endpoint.on_text(id, data);
      });
  }
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override {
    if (auto s = service_.lock())
      s->on_strand([id = conn->id(), reason](impl& self) { self.endpoint.on_close(id, reason); });
  }

 private:
  std::weak_ptr<impl> service_;
};

/// The dashboard's live feed (/dashboard/live): pages only listen.
class registry_service::impl::live_handler : public net::ws_handler {
 public:
  explicit live_handler(std::weak_ptr<impl> service) : service_(std::move(service)) {}

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    if (auto s = service_.lock()) s->on_strand([conn](impl& self) { self.board.watch(conn); });
  }
  void on_message(const std::shared_ptr<net::ws_connection>&, std::string, bool) override {}
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string&) override {
    if (auto s = service_.lock()) s->on_strand([id = conn->id()](impl& self) { self.board.unwatch(id); });
  }

 private:
  std::weak_ptr<impl> service_;
};

registry_service::registry_service(boost::asio::io_context& io, registry_config cfg)
    : impl_(std::make_shared<impl>(io, std::move(cfg))) {
  std::weak_ptr<impl> weak = impl_;
  impl_->server->add_websocket("/registry", std::make_shared<impl::socket_handler>(weak));
  impl_->server->add_websocket("/dashboard/live", std::make_shared<impl::live_handler>(weak));
  impl_->server->set_http_async(
      [weak](const net::http_request& req, std::function<void(net::http_response)> respond) {
        auto self = weak.lock();
        if (!self) {
          net::http_response out;
          out.status = 503;
          out.body = R"({"error": "the registry is stopping"})";
          return respond(std::move(out));
        }
        self->handle_http(req, std::move(respond));
      });
}

registry_service::~registry_service() { stop(); }

std::error_code registry_service::start() {
  // Active at once with a store of its own (its remembered nodes watched before any registers);
  // on a shared store, active only if no other registry holds the lock.
  impl_->role.poll();
  auto ec = impl_->server->start();
  if (ec) return ec;
  impl_->on_strand([](impl& self) { self.start_timers(); });
  return ec;
}

std::uint16_t registry_service::port() const { return impl_->server->port(); }

void registry_service::stop() {
  impl_->server->stop();
  impl_->on_strand([](impl& self) {
    self.endpoint.close_all("the registry is stopping");
    self.board.stop();
    self.timer.cancel();
    self.heartbeat_timer.cancel();
    self.role_timer.cancel();
  });
}

}  // namespace dde::registry
