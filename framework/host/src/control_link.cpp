#include "control_link.hpp"

#include <unistd.h>

#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "dde/net/auth.hpp"

namespace dde::host {
namespace {
std::shared_ptr<spdlog::logger> log() { return logger("host.control"); }
}  // namespace

/// Answers one request on the link it came from: `reply(true, result)` or `reply(false, error, status)`.
struct replier {
  std::shared_ptr<net::ws_connection> conn;
  std::uint64_t id;
  void operator()(bool ok, nlohmann::json result_or_error, int status = 0) const {
    protocol::control_response r{id, ok, nullptr, status ? status : 500, {}};
    if (ok)
      r.result = std::move(result_or_error);
    else
      r.error = result_or_error.is_string() ? result_or_error.get<std::string>() : result_or_error.dump();
    conn->send(protocol::encode(r), false);
  }
};

control_link::control_link(boost::asio::io_context& io, std::shared_ptr<controller> ctrl,
                           control_options options)
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
    self->conn_->send(protocol::encode(protocol::control_event{std::move(event)}), false);
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
    log()->error("no activator at {} for {} ms: stopping", self->options_.url,
                 self->options_.orphan_timeout.count());
    self->options_.request_stop("orphaned");
  });
}

void control_link::link_down(const std::string& why) {
  if (stopped_) return;
  auto delay = retry_.schedule([self = shared_from_this()] { self->do_connect(); });
  log()->warn("activator {} unavailable: {}; retrying in {} ms", options_.url, why, delay.count());
}

void control_link::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stopped_) return conn->close("stopping");
    self->conn_ = conn;
    self->retry_.reset();
    self->orphan_timer_.cancel();
    protocol::control_hello hello{self->options_.system, self->options_.instance, ::getpid(),
                                  self->options_.mqs, self->options_.ops_port};
    conn->send(protocol::encode(hello), false);
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
  auto frame = protocol::parse_control_request(data);
  if (!frame) {
    log()->warn("ignoring a bad control frame ({}): {}", frame.error(), data.substr(0, 200));
    return;
  }
  if (auto* bad = std::get_if<protocol::bad_request>(&frame.value()))
    return replier{conn, bad->id}(false, bad->error, 400);
  auto& request = std::get<protocol::control_request_frame>(frame.value());
  std::visit([&](auto& r) { handle(replier{conn, request.id}, r); }, request.request);
}

void control_link::handle(const replier& reply, protocol::control::add_isolate& r) {
  auto spec = parse_pool_spec(r.spec, options_.system);
  if (!spec) return reply(false, spec.error(), 400);
  auto isolate = spec.value().isolate;
  std::optional<std::chrono::milliseconds> wait;
  if (r.link_timeout_ms) wait = std::chrono::milliseconds(*r.link_timeout_ms);
  controller_->add_pool(
      spec.value(),
      [reply, isolate, instance = options_.instance](op_result added) {
        if (!added) return reply(false, added.error(), http_status(added));
        reply(true, {{"isolateName", isolate}, {"instance", instance}});
      },
      wait);
}

void control_link::handle(const replier& reply, protocol::control::remove_isolate& r) {
  controller_->remove_pool(r.isolate, [reply](op_result removed) {
    if (!removed) return reply(false, removed.error(), http_status(removed));
    reply(true, nlohmann::json::object());
  });
}

void control_link::handle(const replier& reply, protocol::control::restart_isolate& r) {
  controller_->restart_pool(r.isolate, [reply](op_result restarted) {
    if (!restarted) return reply(false, restarted.error(), http_status(restarted));
    reply(true, nlohmann::json::object());
  });
}

void control_link::handle(const replier& reply, protocol::control::kill_isolate& r) {
  controller_->kill_workers(r.isolate, r.worker_id.value_or(""), [reply](kill_result killed) {
    if (!killed) return reply(false, killed.error(), http_status(killed));
    reply(true, {{"killed", killed.value()}});
  });
}

void control_link::handle(const replier& reply, protocol::control::set_rate& r) {
  // The same rules as a deploy body's "rate" and "maxInFlight".
  auto probe = nlohmann::json{{"isolateName", "x"}, {"uri", "x"}};
  if (!r.rate.is_discarded()) probe["rate"] = r.rate;
  if (!r.max_in_flight.is_discarded()) probe["maxInFlight"] = r.max_in_flight;
  auto parsed = parse_pool_spec(probe, options_.system);
  if (!parsed) return reply(false, parsed.error(), 400);
  controller_->set_rate(r.isolate, parsed.value().rate_messages, parsed.value().rate_per,
                        parsed.value().max_in_flight, [reply](op_result set) {
                          if (!set) return reply(false, set.error(), http_status(set));
                          reply(true, nlohmann::json::object());
                        });
}

void control_link::handle(const replier& reply, protocol::control::describe& r) {
  controller_->describe(r.isolates,
                        [reply, mqs = options_.mqs, instance = options_.instance](nlohmann::json d) {
                          for (auto& [system, pools] : d.items())
                            for (auto& p : pools) {
                              p["messageQueuingSystemServer"] = mqs;
                              p["instance"] = instance;
                            }
                          reply(true, std::move(d));
                        });
}

void control_link::handle(const replier& reply, protocol::control::shutdown&) {
  reply(true, nlohmann::json::object());
  options_.request_stop("shutdown requested by the activator");
}

}  // namespace dde::host
