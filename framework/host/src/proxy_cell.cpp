#include "proxy_cell.hpp"

#include <boost/asio/post.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"

namespace dde::host {
namespace {
std::shared_ptr<spdlog::logger> log() { return logger("host.proxy"); }
constexpr std::chrono::milliseconds max_backoff{5000};
}  // namespace

proxy_cell::proxy_cell(boost::asio::io_context& io, std::weak_ptr<cell_owner> owner,
                       std::shared_ptr<const pool_spec> spec, std::string url, std::size_t index)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      owner_(std::move(owner)),
      spec_(std::move(spec)),
      url_text_(std::move(url)),
      index_(index),
      id_("proxy-" + new_uuid()),
      retry_(strand_, std::chrono::milliseconds(200), max_backoff) {}

result<bool> proxy_cell::create() {
  auto url = net::parse_ws_url(url_text_);
  if (!url)
    return result<bool>::failure("workersPaths entry \"" + url_text_ + "\" is not a ws:// or wss:// URL");
  url_ = *url;
  return true;
}

void proxy_cell::start() {
  boost::asio::post(strand_, [self = shared_from_this()] { self->do_connect(); });
}

void proxy_cell::do_connect() {
  if (killed_) return;
  auto self = shared_from_this();
  net::ws_connect(
      io_, url_, self,
      [self](const std::string& why) {
        boost::asio::post(self->strand_, [self, why] { self->link_down(why); });
      },
      net::cluster_link_options());
}

void proxy_cell::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->killed_) return conn->close("proxy stopped");
    self->conn_ = conn;
    auto owner = self->owner_.lock();
    protocol::proxy::spawn spawn{to_deploy_body(*self->spec_), self->index_,
                                 owner ? owner->instance() : std::string()};
    conn->send(protocol::encode(spawn), false);
  });
}

void proxy_cell::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, data = std::move(data)] {
    if (conn != self->conn_) return;
    auto frame = protocol::parse_deployer_frame(data);
    if (!frame) {
      log()->warn("{}: bad frame from {} ({}): {}", self->spec_->addr().str(), self->url_text_, frame.error(),
                  data.substr(0, 200));
      return;
    }
    if (auto owner = self->owner_.lock())
      std::visit([&](auto& f) { self->handle(*owner, f); }, frame.value());
  });
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::spawned& f) {
  if (!f.worker_id.empty()) id_ = f.worker_id;
  spawned_ = true;
  reported_down_ = false;
  retry_.reset();
  log()->info("{}: remote worker {} spawned at {}", spec_->addr().str(), id_, url_text_);
  owner.worker_up(index_, id_);
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::done& f) {
  if (in_flight_.erase(f.delivery)) owner.worker_done(index_, f.delivery);
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::failed& f) {
  if (!f.worker_id.empty()) id_ = f.worker_id;
  auto d = f.delivery != 0 && in_flight_.erase(f.delivery) ? f.delivery : 0;
  owner.worker_failed(index_, d, f.error.empty() ? "remote worker failed" : f.error, f.worker_id);
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::rate_limited& f) {
  if (in_flight_.erase(f.delivery))
    owner.worker_rate_limited(index_, f.delivery, f.delay, f.reason.empty() ? "rate limited" : f.reason,
                              to_message(std::move(f.env), f.redelivered));
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::crashed& f) {
  auto d = f.delivery != 0 && in_flight_.erase(f.delivery) ? f.delivery : 0;
  owner.worker_crashed(index_, d, f.error.empty() ? "remote worker failed" : f.error);
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::up& f) {
  if (!f.worker_id.empty()) id_ = f.worker_id;
  owner.worker_up(index_, id_);
}

void proxy_cell::handle(cell_owner& owner, protocol::deployer::enqueue& f) {
  owner.enqueue(f.topic, f.mode, f.env);
}

void proxy_cell::handle(cell_owner&, protocol::deployer::error& f) {
  link_down("remote node refused the worker: " + f.error);
}

void proxy_cell::post_message(message&& m, std::uint64_t delivery_id) {
  boost::asio::post(strand_, [self = shared_from_this(), m = std::move(m), delivery_id] {
    auto owner = self->owner_.lock();
    if (!self->conn_ || !self->spawned_) {
      if (owner) owner->worker_failed(self->index_, delivery_id, "remote worker not connected", {});
      return;
    }
    self->in_flight_.insert(delivery_id);
    self->conn_->send(
        protocol::encode(protocol::proxy::message{delivery_id, to_envelope(m), m.redelivered()}), false);
  });
}

void proxy_cell::post_reply(message m) {
  boost::asio::post(strand_, [self = shared_from_this(), m = std::move(m)] {
    if (!self->conn_ || !self->spawned_) return;  // a reply for a gone worker is dropped, as locally
    auto e = to_envelope(m);
    e.to_worker = self->id_;
    self->conn_->send(protocol::encode(protocol::proxy::reply{std::move(e)}), false);
  });
}

void proxy_cell::supervise(directive d, std::chrono::milliseconds delay) {
  boost::asio::post(strand_, [self = shared_from_this(), d, delay] {
    if (!self->conn_) return;  // the link is down: the worker is respawned fresh anyway
    auto what = d == directive::resume    ? protocol::proxy::directive::resume
                : d == directive::restart ? protocol::proxy::directive::restart
                                          : protocol::proxy::directive::stop;
    self->conn_->send(protocol::encode(protocol::proxy::supervise{what, delay}), false);
  });
}

void proxy_cell::ping(std::function<void(bool, std::chrono::milliseconds)> pong) {
  boost::asio::post(strand_, [pong = std::move(pong)] { pong(false, std::chrono::milliseconds(0)); });
}

void proxy_cell::kill(std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    self->killed_ = true;
    self->retry_.cancel();
    if (self->conn_) self->conn_->close("pool stopped");
    self->conn_.reset();
    done();
  });
}

void proxy_cell::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    if (conn != self->conn_) return;
    self->conn_.reset();
    self->link_down("link to " + self->url_text_ + " lost: " + reason);
  });
}

void proxy_cell::link_down(const std::string& why) {
  spawned_ = false;
  if (conn_) {
    conn_->close("restarting");
    conn_.reset();
  }
  auto owner = owner_.lock();
  if (owner) {
    // Unfinished messages go back to the broker; the slot takes nothing until the worker is back.
    for (auto d : in_flight_) owner->worker_failed(index_, d, why, {});
    in_flight_.clear();
    if (!reported_down_) owner->worker_failed(index_, 0, why, {});
  }
  if (killed_) return;
  if (!reported_down_)
    log()->warn("{}: {}; retrying every {} ms at most", spec_->addr().str(), why, max_backoff.count());
  reported_down_ = true;
  retry_.schedule([self = shared_from_this()] { self->do_connect(); });
}

}  // namespace dde::host
