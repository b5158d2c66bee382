#include "bootstrapper.hpp"

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/metrics.hpp"
#include "dde/net/auth.hpp"

namespace dde::activator {
namespace {
std::shared_ptr<spdlog::logger> log() { return logger("activator.bootstrapper"); }

/// A string field, or "" when it is absent, null or not a string.
std::string text(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
}  // namespace

bootstrapper::bootstrapper(boost::asio::io_context& io, std::shared_ptr<system_manager> systems,
                           bootstrapper_options options)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      systems_(std::move(systems)),
      options_(std::move(options)),
      retry_(strand_, std::chrono::milliseconds(100), std::chrono::milliseconds(5000)) {
  auto url = net::parse_ws_url(options_.registry_url);
  if (!url) throw std::invalid_argument("bad --registry URL \"" + options_.registry_url + "\": expected ws://host:port/registry");
  url_ = *url;
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
      io_, url_, self,
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
  log()->warn("registry {} unavailable: {}; retrying in {} ms", options_.registry_url, why,
              retry_.delay().count());
  retry_.schedule([self = shared_from_this()] { self->do_connect(); });
}

void bootstrapper::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stopped_) return conn->close("stopping");
    self->conn_ = conn;
    nlohmann::json reg = {{"type", "register"},
                          {"protocol", 1},
                          {"bootstrapperId", self->id_.empty() ? nlohmann::json(nullptr) : nlohmann::json(self->id_)},
                          {"host", self->options_.host},
                          {"port", self->options_.port},
                          {"name", self->options_.name}};
    if (self->options_.tls) reg["tls"] = true;
    conn->send(reg.dump(), false);
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
    auto frame = nlohmann::json::parse(data, nullptr, false);
    if (frame.is_discarded() || !frame.is_object()) {
      log()->warn("bad frame from the registry: {}", data.substr(0, 200));
      return;
    }
    auto type = frame.value("type", std::string());
    if (type == "registered") {
      if (!self->id_.empty())
        metrics_registry::process()
            .counter("dde_activator_registry_reconnects_total", "Registrations after a lost registry link.")
            .add();
      self->id_ = frame.value("bootstrapperId", std::string());
      {
        std::lock_guard lock(self->registration_mutex_);
        self->registration_ = self->id_;
      }
      self->retry_.reset();
      log()->info("registered with {} as bootstrapper {}", self->options_.registry_url, self->id_);
    } else if (type == "request") {
      self->serve(conn, frame);
    } else if (type == "error") {
      log()->error("the registry refused this node: {}", frame.value("error", std::string("?")));
    }
  });
}

void bootstrapper::serve(const std::shared_ptr<net::ws_connection>& conn, const nlohmann::json& request) {
  auto id = request.value("id", nlohmann::json(0));
  auto action = text(request, "action");
  auto answer = [conn, id, action](outcome o) {
    nlohmann::json r = {{"type", "response"}, {"id", id}, {"ok", o.ok}};
    if (o.ok) {
      r["result"] = std::move(o.result);
    } else {
      r["status"] = o.status;
      r["error"] = o.error;
      log()->warn("{} failed: {}", action, o.error);
    }
    conn->send(r.dump(), false);
  };
  if (action == "ping") {
    answer(outcome{});  // the registry's heartbeat: ok, {}
  } else if (action == "deploy") {
    systems_->deploy(request.value("body", nlohmann::json::object()), answer);
  } else if (action == "shutdown") {
    systems_->shutdown(text(request, "isolateSystemName"), text(request, "isolateName"), answer);
  } else if (action == "describe") {
    systems_->describe(answer);
  } else if (action == "setRate") {
    nlohmann::json limits = nlohmann::json::object();
    for (auto key : {"rate", "maxInFlight"})
      if (request.contains(key) && !request[key].is_null()) limits[key] = request[key];
    systems_->set_rate(text(request, "isolateSystemName"), text(request, "isolateName"), limits, answer);
  } else if (action == "restart") {
    systems_->restart(text(request, "isolateSystemName"), text(request, "isolateName"), answer);
  } else if (action == "kill") {
    systems_->kill(text(request, "isolateSystemName"), text(request, "isolateName"),
                   request.value("workerId", nlohmann::json()), answer);
  } else if (action == "migrate") {
    systems_->migrate(text(request, "isolateSystemName"), text(request, "isolateName"),
                      request.value("workersPaths", nlohmann::json::array()), answer);
  } else {
    answer(outcome::failure(400, "unknown request action \"" + action + "\""));
  }
}

}  // namespace dde::activator
