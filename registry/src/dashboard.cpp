#include "dashboard.hpp"

#include "dde/core/metrics.hpp"
#include "dde/core/net/ops_endpoints.hpp"
#include "dde/log.hpp"
#include "dde/net/target.hpp"
#include "web_assets.hpp"

namespace dde::registry {
namespace {

/// The topics of the pools in `samples`, by MQS URL.
std::map<std::string, std::set<std::string>> topics_of(const std::vector<node_sample>& samples) {
  std::map<std::string, std::set<std::string>> out;
  for (auto& s : samples) {
    if (!s.describe) continue;
    for (auto& [system, pools] : s.describe->items())
      for (auto& pool : pools) {
        auto mqs = pool.value("messageQueuingSystemServer", std::string());
        auto id = pool.value("id", std::string());
        auto slash = id.find('/');
        if (!mqs.empty() && slash != std::string::npos) out[mqs].insert(system + "." + id.substr(slash + 1));
      }
  }
  return out;
}

}  // namespace

dashboard::dashboard(node_table& nodes, post_fn post, schedule_fn schedule,
                     std::chrono::milliseconds interval, std::chrono::steady_clock::time_point started)
    : nodes_(nodes),
      post_(std::move(post)),
      schedule_(std::move(schedule)),
      interval_(interval),
      started_(started),
      monitor_(interval.count() > 0 ? std::size_t(300000 / interval.count()) : 300),
      mqs_(std::make_unique<mqs_stats_client>()) {}

dashboard::~dashboard() { stop(); }

void dashboard::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (auto& [id, conn] : watchers_) conn->close("the registry is stopping");
  watchers_.clear();
  mqs_->stop();
}

bool dashboard::handle(const net::http_request& req, const std::function<void(net::http_response)>& respond) {
  std::string path(net::target_path(req.target));
  if (req.method != "GET" && req.method != "HEAD") return false;
  if (path == "/health") {
    auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_);
    net::readiness r;
    r.details = {{"nodes", nodes_.size()}, {"uptimeSeconds", up.count()}};
    if (role_status_) r.details.update(nlohmann::json(role_status_()));
    respond(net::health_response("dde-registry", r));
    return true;
  }
  if (path == "/metrics") {
    answer_metrics(respond);
    return true;
  }
  if (path == "/registry/status") {
    answer_status(respond);
    return true;
  }
  const auto* asset = find_web_asset(path == "/" ? "/index.html" : path);
  if (!asset) return false;
  net::http_response out;
  out.content_type = std::string(asset->content_type);
  out.body = std::string(asset->body);
  out.headers["Cache-Control"] = "no-cache";
  respond(std::move(out));
  return true;
}

void dashboard::answer_metrics(const std::function<void(net::http_response)>& respond) {
  round([this, respond] {
    auto& r = metrics_registry::process();
    monitor_.export_metrics(r);
    r.gauge("dde_registry_websocket_clients", "Open WebSocket connections, by endpoint.",
            {{"endpoint", "registry"}})
        .set(double(nodes_.size()));
    r.gauge("dde_registry_websocket_clients", "Open WebSocket connections, by endpoint.",
            {{"endpoint", "dashboard"}})
        .set(double(watchers_.size()));
    respond(net::metrics_response(r));
  });
}

void dashboard::answer_status(const std::function<void(net::http_response)>& respond) {
  auto send = [this, respond] {
    net::http_response out;
    out.content_type = "application/json";
    out.body = monitor_.snapshot().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    respond(std::move(out));
  };
  // Rates are counted between two rounds: with no recent one, a second round a second later.
  auto now = std::chrono::steady_clock::now();
  bool recent = rounds_ > 0 && now - last_round_ < std::chrono::seconds(5);
  round([this, send, recent] {
    if (recent) return send();
    schedule_(std::chrono::milliseconds(1000), [this, send] { round(send); });
  });
}

void dashboard::watch(std::shared_ptr<net::ws_connection> conn) {
  if (stopped_) return conn->close("the registry is stopping");
  if (rounds_ > 0)
    conn->send(monitor_.snapshot().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), false);
  watchers_[conn->id()] = std::move(conn);
  if (!running_ && !scheduled_) round([] {});
}

void dashboard::unwatch(std::uint64_t conn_id) { watchers_.erase(conn_id); }

void dashboard::round(std::function<void()> then) {
  waiting_.push_back(std::move(then));
  if (running_ || stopped_) return;
  running_ = true;
  auto nodes = nodes_.list();
  auto samples = std::make_shared<std::vector<node_sample>>(nodes.size());
  auto remaining = std::make_shared<std::size_t>(nodes.size() + 1);
  auto finish = [this, samples, remaining] {
    if (--*remaining > 0) return;
    auto topics = topics_of(*samples);
    mqs_->ask(std::move(topics),
              [post = post_, this, samples](std::map<std::string, topic_sample> figures, std::string error) {
                post([this, samples, figures = std::move(figures), error = std::move(error)]() mutable {
                  finish_round(std::move(*samples), std::move(figures), std::move(error));
                });
              });
  };
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    (*samples)[i].info = nodes[i];
    bool sent = nodes_.request(nodes[i].id, protocol::node::describe{}, [samples, i, finish](node_answer a) {
      if (a && a.value().is_object())
        (*samples)[i].describe = std::move(a.value());
      else
        (*samples)[i].error = a ? "describe answered with something other than an object" : a.error();
      finish();
    });
    if (!sent) {
      (*samples)[i].error = "disconnected";
      --*remaining;
    }
  }
  finish();
}

void dashboard::finish_round(std::vector<node_sample> samples, std::map<std::string, topic_sample> figures,
                             std::string error) {
  running_ = false;
  ++rounds_;
  last_round_ = std::chrono::steady_clock::now();
  monitor_.update(std::chrono::steady_clock::now(), std::move(samples), figures, error);
  if (!watchers_.empty()) {
    auto text = monitor_.snapshot().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (auto& [id, conn] : watchers_) {
      // A page that does not read is not fed without limit: it skips rounds until it caught up.
      if (conn->queued_bytes() < 4 * 1024 * 1024) conn->send(text, false);
    }
  }
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& fn : waiting) fn();
  schedule_next();
}

void dashboard::schedule_next() {
  if (stopped_ || scheduled_ || watchers_.empty() || interval_.count() <= 0) return;
  scheduled_ = true;
  schedule_(interval_, [this] {
    scheduled_ = false;
    if (!watchers_.empty() && !running_) round([] {});
  });
}

}  // namespace dde::registry
