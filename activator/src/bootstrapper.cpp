#include "bootstrapper.hpp"

#include <boost/asio/post.hpp>

#include "dde/core/metrics.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"

namespace dde::activator {
namespace {
std::shared_ptr<spdlog::logger> log() { return logger("activator.bootstrapper"); }

/// The node's JSON (nlohmann::json) of the registry's (ordered) JSON, and back.
nlohmann::json plain(const protocol::ordered_json& j) { return nlohmann::json(j); }
protocol::ordered_json ordered(const nlohmann::json& j) { return protocol::ordered_json(j); }

/// Runs one request on the system manager.
struct request_runner {
  system_manager& systems;
  outcome_fn answer;
  /// The registry's heartbeat: what the node runs, by version (the registry describes it when it changed).
  void operator()(protocol::node::ping&) const { answer(succeeded({{"version", systems.version()}})); }
  void operator()(protocol::node::deploy& r) const { systems.deploy(plain(r.body), answer); }
  void operator()(protocol::node::shutdown& r) const {
    systems.shutdown(std::move(r.system), r.isolate.value_or(""), answer);
  }
  void operator()(protocol::node::describe& r) const { systems.describe(std::move(r.only), answer); }
  void operator()(protocol::node::set_rate& r) const {
    nlohmann::json limits = nlohmann::json::object();
    if (!r.rate.is_discarded() && !r.rate.is_null()) limits["rate"] = plain(r.rate);
    if (!r.max_in_flight.is_discarded() && !r.max_in_flight.is_null())
      limits["maxInFlight"] = plain(r.max_in_flight);
    systems.set_rate(std::move(r.system), std::move(r.isolate), std::move(limits), answer);
  }
  void operator()(protocol::node::restart& r) const {
    systems.restart(std::move(r.system), std::move(r.isolate), answer);
  }
  void operator()(protocol::node::kill& r) const {
    systems.kill(std::move(r.system), std::move(r.isolate),
                 r.worker_id ? nlohmann::json(*r.worker_id) : nlohmann::json(), answer);
  }
  void operator()(protocol::node::redeploy& r) const { systems.redeploy(plain(r.body), answer); }
  void operator()(protocol::node::migrate& r) const {
    systems.migrate(std::move(r.system), std::move(r.isolate), nlohmann::json(r.workers_paths), answer);
  }
};
}  // namespace

bootstrapper::bootstrapper(boost::asio::io_context& io, std::shared_ptr<system_manager> systems,
                           bootstrapper_options options)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      systems_(std::move(systems)),
      options_(std::move(options)),
      retry_(strand_, std::chrono::milliseconds(100), std::chrono::milliseconds(5000)) {
  urls_ = parse_registry_urls(options_.registry_url);
}

std::vector<net::ws_url> parse_registry_urls(const std::string& list) {
  auto urls = net::parse_ws_url_list(list);
  if (urls.empty())
    throw std::invalid_argument(
        "bad --registry \"" + list +
        "\": expected ws://host:port/registry, or a comma-separated list of such URLs");
  return urls;
}

void bootstrapper::start() {
  boost::asio::post(strand_, [self = shared_from_this()] { self->do_connect(); });
}

void bootstrapper::stop() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->retry_.cancel();
    if (self->conn_) self->conn_->close("activator stopping");
    self->conn_.reset();
  });
}

std::string bootstrapper::id() const { return id_; }

std::optional<std::string> bootstrapper::registration() const {
  std::lock_guard lock(registration_mutex_);
  return registration_;
}

void bootstrapper::do_connect() {
  if (stopped_) return;
  auto self = shared_from_this();
  net::ws_connect(
      io_, urls_[current_], self,
      [self](const std::string& why) {
        boost::asio::post(self->strand_, [self, why] { self->link_down(why); });
      },
      net::cluster_link_options());
}

void bootstrapper::link_down(const std::string& why) {
  {
    std::lock_guard lock(registration_mutex_);
    registration_.reset();
  }
  if (stopped_) return;
  auto left = net::url_text(urls_[current_]);
  // With a registry pair, the next one: it may be the active one now (or the same one, back).
  current_ = (current_ + 1) % urls_.size();
  auto delay = retry_.schedule([self = shared_from_this()] { self->do_connect(); });
  log()->warn("registry {} unavailable: {}; trying {} in {} ms", left, why, net::url_text(urls_[current_]),
              delay.count());
}

void bootstrapper::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stopped_) return conn->close("stopping");
    self->conn_ = conn;
    protocol::register_frame reg;
    if (!self->id_.empty()) reg.previous_id = self->id_;
    reg.host = self->options_.host;
    reg.port = self->options_.port;
    reg.name = self->options_.name;
    reg.tls = self->options_.tls;
    conn->send(protocol::encode(reg), false);
  });
}

void bootstrapper::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    if (conn != self->conn_) return;
    self->conn_.reset();
    self->link_down("link closed (" + reason + ")");
  });
}

void bootstrapper::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, data = std::move(data)] {
    if (conn != self->conn_) return;
    auto frame = protocol::parse_registry_frame(data);
    if (!frame) {
      log()->warn("bad frame from the registry ({}): {}", frame.error(), data.substr(0, 200));
      return;
    }
    if (auto* registered = std::get_if<protocol::registered_frame>(&frame.value())) {
      if (!self->id_.empty())
        metrics_registry::process()
            .counter("dde_activator_registry_reconnects_total", "Registrations after a lost registry link.")
            .add();
      self->id_ = registered->bootstrapper_id;
      {
        std::lock_guard lock(self->registration_mutex_);
        self->registration_ = self->id_;
      }
      self->retry_.reset();
      log()->info("registered with {} as bootstrapper {}", net::url_text(self->urls_[self->current_]),
                  self->id_);
    } else if (auto* request = std::get_if<protocol::request_frame>(&frame.value())) {
      self->serve(conn, std::move(*request));
    } else if (auto* bad = std::get_if<protocol::bad_request>(&frame.value())) {
      log()->warn("bad request from the registry: {}", bad->error);
      conn->send(protocol::encode(protocol::response_frame{bad->id, false, nullptr, 400, bad->error}), false);
    } else if (auto* error = std::get_if<protocol::error_frame>(&frame.value())) {
      // A standby of a registry pair sends its nodes on to the active one: expected, not an error.
      if (error->error.starts_with("this registry is a standby"))
        log()->info("{}: trying the next registry", error->error);
      else
        log()->error("the registry refused this node: {}", error->error);
    }
  });
}

void bootstrapper::serve(const std::shared_ptr<net::ws_connection>& conn, protocol::request_frame request) {
  auto id = request.id;
  std::string action(protocol::action_of(request.request));
  auto answer = [conn, id, action](outcome o) {
    protocol::response_frame r{id, bool(o), nullptr, 200, {}};
    if (o) {
      r.result = ordered(o.value());
    } else {
      r.status = http_status(o);
      r.error = o.error();
      log()->warn("{} failed: {}", action, r.error);
    }
    conn->send(protocol::encode(r), false);
  };
  std::visit(request_runner{*systems_, answer}, request.request);
}

}  // namespace dde::activator
