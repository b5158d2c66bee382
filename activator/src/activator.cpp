#include "dde/activator/activator.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <future>

#include "bootstrapper.hpp"
#include "dde/core/net/ops_endpoints.hpp"
#include "dde/core/tls_flags.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "isolate_deployer.hpp"
#include "system_manager.hpp"

namespace dde::activator {

activator::activator(activator_options options) : options_(std::move(options)) {}

activator::~activator() { stop(); }

void activator::start() {
  net::server_options so;
  so.host = options_.listen;
  so.port = options_.port;
  so.authorize = net::cluster_secret_guard(options_.cluster_secret, logger("activator"));
  so.tls = options_.tls;
  server_ = net::server::create(io_, so);
  auto& m = options_.manager;
  server_->add_websocket("/activator", make_isolate_deployer(io_, m.plugin_allow));
  server_->set_http([this](const net::http_request& req) { return ops(req); });
  // Children attach over loopback when the activator listens there or on every address.
  std::string control_host = options_.listen == "0.0.0.0" ? "127.0.0.1" : options_.listen;
  if (auto ec = server_->start())
    throw std::runtime_error("cannot listen on " + options_.listen + ":" + std::to_string(options_.port) +
                             ": " + ec.message());
  m.control_url = ws_scheme(options_.tls) + control_host + ":" + std::to_string(server_->port()) + "/control";
  systems_ = std::make_shared<system_manager>(io_, m);
  server_->add_websocket("/control", systems_);
  systems_->start();
  bootstrapper_options b;
  b.registry_url = options_.registry;
  b.name = options_.name;
  b.host = options_.advertise_host.empty() ? control_host : options_.advertise_host;
  b.port = server_->port();
  b.tls = options_.tls.enabled();
  bootstrapper_ = std::make_shared<bootstrapper>(io_, systems_, b);
  bootstrapper_->start();
  auto guard = std::make_shared<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
      io_.get_executor());
  for (int i = 0; i < std::max(1, options_.threads); ++i) threads_.emplace_back([this, guard] { io_.run(); });
  logger("activator")
      ->info("activator {} listening on {}{}:{}/activator, registry {}", options_.name,
             ws_scheme(options_.tls), options_.listen, server_->port(), options_.registry);
}

net::http_response activator::ops(const net::http_request& req) {
  if (net::is_get(req, "/metrics")) return net::metrics_response(metrics_registry::process());
  if (net::is_get(req, "/health")) {
    net::readiness r;
    r.details["registry"] = options_.registry;
    if (auto id = bootstrapper_ ? bootstrapper_->registration() : std::nullopt) {
      r.details["bootstrapperId"] = *id;
    } else {
      r.ready = false;
      r.reason = "not registered with the registry at " + options_.registry;
    }
    return net::health_response("dde-activator", r);
  }
  net::http_response out;
  out.status = 404;
  out.body =
      R"({"error": "the activator serves WebSocket /activator and /control, GET /health and GET /metrics"})";
  return out;
}

void activator::stop() {
  if (threads_.empty()) return;
  std::promise<void> done;
  systems_->stop_all([&done] { done.set_value(); });
  done.get_future().wait();
  bootstrapper_->stop();
  server_->stop();
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  logger("activator")->info("activator stopped");
}

}  // namespace dde::activator
