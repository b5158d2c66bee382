#include "host/control_link.hpp"

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/net/auth.hpp"

namespace dde::host {
namespace {
std::shared_ptr<spdlog::logger> log() { return logger("host.control"); }

nlohmann::json response(const nlohmann::json& request, bool ok, nlohmann::json result_or_error, int status = 0) {
  nlohmann::json r = {{"type", "response"}, {"id", request.value("id", 0)}, {"ok", ok}};
  if (ok) {
    r["result"] = std::move(result_or_error);
  } else {
    r["error"] = std::move(result_or_error);
    r["status"] = status ? status : 500;
  }
  return r;
}
}  // namespace

control_link::control_link(boost::asio::io_context& io, std::shared_ptr<controller> ctrl, control_options options)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      controller_(std::move(ctrl)),
      options_(std::move(options)),
      retry_(strand_, std::chrono::milliseconds(100), std::chrono::milliseconds(2000)),
      orphan_timer_(strand_) {
  auto url = net::parse_ws_url(options_.url);
  if (!url) throw std::invalid_argument("bad --control URL \"" + options_.url + "\"");
  url_ = *url;
}

void control_link::start() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->arm_orphan_timer();
    self->do_connect();
  });
}

void control_link::stop() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->stopped_ = true;
    self->retry_.cancel();
    self->orphan_timer_.cancel();
    if (self->conn_) self->conn_->close("isolate system stopping");
    self->conn_.reset();
  });
}

void control_link::send_event(nlohmann::json event) {
  boost::asio::post(strand_, [self = shared_from_this(), event = std::move(event)]() mutable {
    if (!self->conn_) return;
    event["type"] = "event";
    self->conn_->send(event.dump(), false);
  });
}

void control_link::do_connect() {
  if (stopped_) return;
  auto self = shared_from_this();
  net::ws_connect(
      io_, url_, self,
      [self](const std::string& why) {
        boost::asio::post(self->strand_, [self, why] { self->link_down(why); });
      },
      net::cluster_link_options());
}

void control_link::arm_orphan_timer() {
  orphan_timer_.expires_after(options_.orphan_timeout);
  orphan_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->conn_ || self->stopped_) return;
    log()->error("no activator at {} for {} ms: stopping", self->options_.url, self->options_.orphan_timeout.count());
    self->options_.request_stop("orphaned");
  });
}

void control_link::link_down(const std::string& why) {
  if (stopped_) return;
  log()->warn("activator {} unavailable: {}; retrying in {} ms", options_.url, why, retry_.delay().count());
  retry_.schedule([self = shared_from_this()] { self->do_connect(); });
}

void control_link::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stopped_) return conn->close("stopping");
    self->conn_ = conn;
    self->retry_.reset();
    self->orphan_timer_.cancel();
    nlohmann::json hello = {{"type", "hello"},          {"protocol", 1},
                            {"system", self->options_.system}, {"instance", self->options_.instance},
                            {"pid", ::getpid()},           {"mqs", self->options_.mqs}};
    if (self->options_.ops_port) hello["opsPort"] = self->options_.ops_port;
    conn->send(hello.dump(), false);
    log()->info("attached to activator {}", self->options_.url);
  });
}

void control_link::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    if (conn != self->conn_) return;
    self->conn_.reset();
    if (self->stopped_) return;
    self->arm_orphan_timer();
    self->link_down("link closed (" + reason + ")");
  });
}

void control_link::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) {
  auto request = nlohmann::json::parse(data, nullptr, false);
  if (request.is_discarded() || !request.is_object() || request.value("type", "") != "request") {
    log()->warn("ignoring a bad control frame: {}", data.substr(0, 200));
    return;
  }
  handle(conn, request);
}

void control_link::handle(const std::shared_ptr<net::ws_connection>& conn, const nlohmann::json& request) {
  auto action = request.value("action", std::string());
  auto reply = [conn, request](bool ok, nlohmann::json payload, int status = 0) {
    conn->send(response(request, ok, std::move(payload), status).dump(), false);
  };
  if (action == "addIsolate") {
    auto spec = parse_pool_spec(request.value("spec", nlohmann::json()), options_.system);
    if (!spec) return reply(false, spec.error(), 400);
    auto isolate = spec.value().isolate;
    controller_->add_pool(spec.value(), [reply, isolate, instance = options_.instance](std::string error) {
      if (!error.empty()) return reply(false, error, error.find("already deployed") != std::string::npos ? 409 : 400);
      reply(true, {{"isolateName", isolate}, {"instance", instance}});
    });
  } else if (action == "removeIsolate") {
    auto isolate = request.value("isolateName", std::string());
    controller_->remove_pool(isolate, [reply](std::string error) {
      if (!error.empty()) return reply(false, error, 404);
      reply(true, nlohmann::json::object());
    });
  } else if (action == "restartIsolate") {
    controller_->restart_pool(request.value("isolateName", std::string()), [reply](std::string error) {
      if (!error.empty()) return reply(false, error, error.find("no pool") != std::string::npos ? 404 : 409);
      reply(true, nlohmann::json::object());
    });
  } else if (action == "killIsolate") {
    auto worker = request.value("workerId", nlohmann::json());
    if (!worker.is_null() && (!worker.is_string() || worker.get<std::string>().empty()))
      return reply(false, "field \"workerId\" must be a non-empty string (or absent: every worker)", 400);
    controller_->kill_workers(request.value("isolateName", std::string()),
                              worker.is_string() ? worker.get<std::string>() : "",
                              [reply](std::string error, std::vector<std::string> killed) {
                                if (!error.empty())
                                  return reply(false, error,
                                               error.find("no pool") != std::string::npos ||
                                                       error.find("no worker") != std::string::npos
                                                   ? 404
                                                   : 409);
                                reply(true, {{"killed", killed}});
                              });
  } else if (action == "setRate") {
    // The same rules as a deploy body's "rate" and "maxInFlight".
    auto probe = nlohmann::json{{"isolateName", "x"}, {"uri", "x"}};
    for (auto key : {"rate", "maxInFlight"})
      if (request.contains(key)) probe[key] = request[key];
    auto parsed = parse_pool_spec(probe, options_.system);
    if (!parsed) return reply(false, parsed.error(), 400);
    controller_->set_rate(request.value("isolateName", std::string()), parsed.value().rate_messages,
                          parsed.value().rate_per, parsed.value().max_in_flight, [reply](std::string error) {
                            if (!error.empty())
                              return reply(false, error, error.find("no pool") != std::string::npos ? 404 : 409);
                            reply(true, nlohmann::json::object());
                          });
  } else if (action == "describe") {
    controller_->describe([reply, mqs = options_.mqs, instance = options_.instance](nlohmann::json d) {
      for (auto& [system, pools] : d.items())
        for (auto& p : pools) {
          p["messageQueuingSystemServer"] = mqs;
          p["instance"] = instance;
        }
      reply(true, std::move(d));
    });
  } else if (action == "shutdown") {
    reply(true, nlohmann::json::object());
    options_.request_stop("shutdown requested by the activator");
  } else {
    reply(false, "unknown control action \"" + action + "\"", 400);
  }
}

}  // namespace dde::host
