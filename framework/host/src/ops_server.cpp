#include "ops_server.hpp"

#include <stdexcept>

#include "controller.hpp"
#include "dde/core/net/ops_endpoints.hpp"

namespace dde::host {

ops_server::ops_server(boost::asio::io_context& io, std::shared_ptr<controller> ctrl,
                       std::shared_ptr<top_level> top, ops_server_options options)
    : controller_(std::move(ctrl)), top_(std::move(top)), options_(std::move(options)) {
  net::server_options so;
  so.host = options_.host;
  so.port = options_.port;
  so.max_http_body = 64 * 1024;
  server_ = net::server::create(io, so);
  server_->set_http_async(
      [this](const net::http_request& req, std::function<void(net::http_response)> respond) {
        handle(req, std::move(respond));
      });
}

ops_server::~ops_server() { stop(); }

void ops_server::start() {
  if (auto ec = server_->start())
    throw std::runtime_error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                             " for /metrics and /health: " + ec.message());
}

void ops_server::stop() {
  if (server_) server_->stop();
}

std::uint16_t ops_server::port() const { return server_->port(); }

void ops_server::handle(const net::http_request& req, std::function<void(net::http_response)> respond) {
  if (net::is_get(req, "/health")) {
    top_->read_stats([respond, options = options_](const top_level_stats& link) {
      net::readiness r;
      r.ready = link.linked;
      r.reason = link.link_error;
      if (r.ready && !link.stalled.empty()) {
        r.degraded = true;
        r.reason = "no delivery while messages wait: " + link.stalled;
      }
      r.details = {{"system", options.system}, {"instance", options.instance}, {"mqs", options.mqs}};
      respond(net::health_response("dde-isolate-system", r));
    });
    return;
  }
  if (net::is_get(req, "/metrics")) {
    // The pools' counters are read on their strands, then the link's on the top level's.
    controller_->describe([top = top_, respond](nlohmann::json pools) {
      top->read_stats([pools = std::move(pools), respond](const top_level_stats& link) {
        metrics_registry figures;
        add_host_metrics(figures, pools, link);
        auto out = net::metrics_response(metrics_registry::process());
        out.body = figures.render() + out.body;
        respond(std::move(out));
      });
    });
    return;
  }
  net::http_response out;
  out.status = 404;
  out.body = R"({"error": "an isolate system serves GET /health and GET /metrics"})";
  respond(std::move(out));
}

namespace {

std::uint64_t number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<std::uint64_t>() : 0;
}

}  // namespace

void add_host_metrics(metrics_registry& out, const nlohmann::json& pools, const top_level_stats& link) {
  struct counter_field {
    const char* name;
    const char* field;  ///< in the pool's `stats`
    const char* help;
  };
  static const counter_field counters[] = {
      {"dde_host_messages_received_total", "delivered", "Messages the MQS delivered to the pool."},
      {"dde_host_messages_handled_total", "done", "Messages the pool's workers finished with done()."},
      {"dde_host_messages_failed_total", "failed", "Messages whose handling failed (to supervision)."},
      {"dde_host_messages_sent_total", "sent", "Messages the pool's workers sent (send, ask, reply)."},
      {"dde_host_messages_acked_total", "acked",
       "At-least-once messages acked to the broker after the work."},
      {"dde_host_messages_redelivered_total", "redelivered", "Deliveries the broker had delivered before."},
      {"dde_host_worker_restarts_total", "restarts",
       "Workers replaced by supervision or the starvation guard."},
  };
  for (auto& [system, list] : pools.items()) {
    if (!list.is_array()) continue;
    for (auto& pool : list) {
      auto id = pool.value("id", std::string());
      auto slash = id.find('/');
      if (slash == std::string::npos) continue;
      metric_labels l = {{"pool", id.substr(0, slash) + "." + id.substr(slash + 1)}};
      auto stats = pool.value("stats", nlohmann::json::object());
      for (auto& c : counters) out.counter(c.name, c.help, l).set(double(number(stats, c.field)));
      auto hot = pool.value("hotDeploy", nlohmann::json::object());
      out.counter("dde_host_hot_swaps_total", "Plugin versions swapped in by hot deployment.", l)
          .set(double(number(hot, "swaps")));
      out.counter("dde_host_messages_dead_lettered_total",
                  "Messages the pool sent to dde.dead.<queue> (rate-limit retries spent, poison messages).",
                  l)
          .set(double(number(pool.value("governance", nlohmann::json::object()), "deadLettered")));
      std::uint64_t in_flight = 0, workers = 0;
      for (auto& w : pool.value("workers", nlohmann::json::array())) {
        in_flight += number(w, "inFlight");
        if (w.value("state", std::string()) == "running") ++workers;
      }
      out.gauge("dde_host_in_flight", "Messages the pool's workers hold now.", l).set(double(in_flight));
      out.gauge("dde_host_workers", "Workers of the pool that run now.", l).set(double(workers));
    }
  }
  for (auto& [topic, n] : link.stalls)
    out.counter("dde_host_pool_stalls_total",
                "Times the pool had credit out at the MQS, no delivery and messages waiting for the stall "
                "timeout (the MQS link was then replaced).",
                {{"pool", topic}})
        .set(double(n));
  out.gauge("dde_host_mqs_connected", "1 while the link to the MQS is up.").set(link.linked ? 1 : 0);
  out.counter("dde_host_mqs_reconnects_total", "Reconnections to an MQS after the first connection.")
      .set(double(link.reconnects));
  out.counter("dde_host_mqs_resent_total", "At-least-once messages sent again after a reconnect.")
      .set(double(link.resent));
}

}  // namespace dde::host
