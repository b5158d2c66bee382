#include "dde/mqs/mqs_server.hpp"

#include "dde/core/net/ops_endpoints.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/net/target.hpp"
#include "dde/net/ws.hpp"
#include "dead_letters.hpp"
#include "mqs_metrics.hpp"
#include "queue_inspector.hpp"
#include "service.hpp"

namespace dde::mqs {
namespace {

using respond_fn = std::function<void(net::http_response)>;

/// The queues to ask the broker about for `topics`: each, and its dead-letter queue.
std::vector<std::string> queues_of(const std::vector<std::string>& topics) {
  std::vector<std::string> out;
  for (auto& t : topics) {
    out.push_back(t);
    if (t.rfind("dde.", 0) != 0) out.push_back("dde.dead." + t);
  }
  return out;
}

/// `names=a,b` of a target's query.
std::vector<std::string> names_in(const std::string& target) {
  std::vector<std::string> out;
  auto names = net::query_param(target, "names");  // not "xnames=": the whole parameter name
  if (!names) return out;
  const std::string& list = *names;
  for (std::size_t start = 0; start <= list.size();) {
    auto comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

void answer_metrics(service& svc, queue_inspector& inspector, respond_fn respond) {
  auto& m = mqs_metrics::process();
  auto& r = m.registry();
  r.gauge("dde_mqs_websocket_clients", "Isolate systems connected over WebSocket.")
      .set(double(svc.clients()));
  r.gauge("dde_mqs_broker_connected", "1 while the publishing connection to the broker is up.")
      .set(svc.readiness().ready ? 1 : 0);
  inspector.ask(queues_of(m.topics()), [respond = std::move(respond)](depth_report report) {
    auto& r = mqs_metrics::process().registry();
    r.clear("dde_mqs_queue_messages");
    r.clear("dde_mqs_queue_consumers");
    for (auto& [name, d] : report.queues) {
      r.gauge("dde_mqs_queue_messages", "Messages ready in the broker's queue (passive queue.declare).",
              {{"queue", name}})
          .set(double(d.messages));
      r.gauge("dde_mqs_queue_consumers", "Consumers of the broker's queue.", {{"queue", name}})
          .set(double(d.consumers));
    }
    respond(net::metrics_response(r));
  });
}

/// GET /topics?names=a,b: the counters and queue depths of those topics, as JSON (the registry's view).
void answer_topics(const std::string& target, queue_inspector& inspector, respond_fn respond) {
  auto topics = names_in(target);
  inspector.ask(queues_of(topics), [topics, respond = std::move(respond)](depth_report report) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& t : topics) {
      auto& c = mqs_metrics::process().topic(t);
      nlohmann::json entry = {{"published", c.published.value()}, {"consumed", c.consumed.value()},
                              {"acked", c.acked.value()},         {"redelivered", c.redelivered.value()},
                              {"returned", c.returned.value()},   {"republished", c.republished.value()},
                              {"consumers", c.consumers.value()}};
      if (auto it = report.queues.find(t); it != report.queues.end()) {
        entry["queueDepth"] = it->second.messages;
        entry["queueConsumers"] = it->second.consumers;
      }
      if (auto it = report.queues.find("dde.dead." + t); it != report.queues.end())
        entry["deadLetterDepth"] = it->second.messages;
      out[t] = std::move(entry);
    }
    net::http_response res;
    nlohmann::json body = {{"topics", out}};
    if (!report.error.empty()) body["error"] = report.error;
    res.body = body.dump();
    respond(std::move(res));
  });
}

/// GET /dlq, POST /dlq/replay, POST /dlq/purge (mqs/PROTOCOL.md, "Dead letters"). They show message
/// bodies and move or drop messages: with a cluster secret configured they need it (X-DDE-Cluster-Secret),
/// as the WebSocket links between daemons do.
void answer_dlq(const net::http_request& req, const std::string& secret, dead_letter_desk& desk,
                respond_fn respond) {
  auto reply = [&respond](int status, nlohmann::json body) {
    net::http_response out;
    out.status = status;
    out.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    respond(std::move(out));
  };
  if (!secret.empty()) {
    auto it = req.headers.find(std::string(net::cluster_secret_header));
    if (it == req.headers.end() || !net::constant_time_equal(it->second, secret)) {
      logger("mqs")->warn("refused {} {} from {}: {} cluster secret", req.method,
                          net::target_path(req.target), req.remote, it == req.headers.end() ? "no" : "wrong");
      return reply(
          401,
          {{"error", "the dead-letter endpoints need the cluster secret (header X-DDE-Cluster-Secret)"}});
    }
  }
  const auto path = net::target_path(req.target);
  dlq_action action;
  result<dlq_request> parsed = result<dlq_request>::failure("");
  const char* method = path == "/dlq" ? "GET" : "POST";
  if (req.method != method)
    return reply(405, {{"error", "method " + req.method + " is not allowed on " + std::string(path) +
                                     "; use " + method}});
  if (path == "/dlq") {
    action = dlq_action::list;
    parsed = parse_dlq_query(req.target);
  } else if (path == "/dlq/replay") {
    action = dlq_action::replay;
    parsed = parse_replay_body(req.body);
  } else {
    action = dlq_action::purge;
    parsed = parse_purge_body(req.body);
  }
  if (!parsed) return reply(400, {{"error", parsed.error()}});
  desk.ask(action, std::move(parsed.value()), [respond = std::move(respond)](dlq_answer a) {
    net::http_response out;
    out.status = a.status;
    out.body = a.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    respond(std::move(out));
  });
}

bool is_dlq_path(std::string_view path) {
  return path == "/dlq" || path == "/dlq/replay" || path == "/dlq/purge";
}

}  // namespace

struct mqs_server::impl {
  boost::asio::io_context* io = nullptr;
  std::shared_ptr<service> svc;
  std::shared_ptr<queue_inspector> inspector;
  std::shared_ptr<dead_letter_desk> desk;
  std::unique_ptr<net::server> server;
};

mqs_server::mqs_server(boost::asio::io_context& io, const config& cfg) : impl_(std::make_unique<impl>()) {
  impl_->io = &io;
  impl_->svc = std::make_shared<service>(cfg);
  impl_->inspector = std::make_shared<queue_inspector>(cfg);
  impl_->desk = std::make_shared<dead_letter_desk>(cfg);
  net::server_options options;
  options.host = cfg.listen;
  options.port = cfg.port;
  options.max_ws_message = cfg.max_frame;
  options.tls = cfg.tls;
  options.authorize = net::cluster_secret_guard(cfg.cluster_secret, logger("mqs"));
  impl_->server = net::server::create(io, options);
  impl_->server->add_websocket("/mqs", impl_->svc);
  impl_->server->set_http_async([svc = std::weak_ptr<service>(impl_->svc),
                                 inspector = std::weak_ptr<queue_inspector>(impl_->inspector),
                                 desk = std::weak_ptr<dead_letter_desk>(impl_->desk),
                                 secret = cfg.cluster_secret](const net::http_request& req,
                                                              respond_fn respond) {
    auto s = svc.lock();
    auto i = inspector.lock();
    auto d = desk.lock();
    net::http_response out;
    if (!s || !i || !d) {
      out.status = 503;
      out.body = R"({"error": "the MQS is stopping"})";
    } else if (net::is_get(req, "/health")) {
      out = net::health_response("dde-mqs", s->readiness());
    } else if (net::is_get(req, "/metrics")) {
      return answer_metrics(*s, *i, std::move(respond));
    } else if (net::is_get(req, "/topics")) {
      return answer_topics(req.target, *i, std::move(respond));
    } else if (is_dlq_path(net::target_path(req.target))) {
      return answer_dlq(req, secret, *d, std::move(respond));
    } else {
      out.status = 404;
      out.body =
          R"({"error": "the MQS serves WebSocket /mqs, GET /health, /metrics, /topics?names=a,b, /dlq?topic=T and POST /dlq/replay, /dlq/purge"})";
    }
    respond(std::move(out));
  });
}

mqs_server::~mqs_server() { stop(); }

std::error_code mqs_server::start() {
  impl_->svc->start(impl_->io);
  return impl_->server->start();
}

std::uint16_t mqs_server::port() const { return impl_->server->port(); }

void mqs_server::stop_accepting() { impl_->server->stop(); }

void mqs_server::stop() {
  impl_->server->stop();
  impl_->inspector->stop();
  impl_->desk->stop();
  impl_->svc->stop();
}

}  // namespace dde::mqs
