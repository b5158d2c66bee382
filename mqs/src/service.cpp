#include "service.hpp"

#include <malloc.h>

#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {

spdlog::logger& service::log() {
  static auto l = dde::logger("mqs");
  return *l;
}

service::service(const config& cfg)
    : cfg_(cfg),
      id_(new_uuid()),
      flow_(cfg.backlog_messages, cfg.backlog_bytes),
      enqueuer_(cfg, flow_),
      dequeuer_(cfg, id_) {
  // A burst that filled a tenth of the backlog or more leaves its messages' memory in malloc's
  // arenas once published (50 MiB after 100,000 messages of 64 B); it goes back to the system when
  // the backlog empties, so an idle MQS is its idle size again (bench experiment 9).
  flow_.on_drained(std::max<std::size_t>(1000, cfg.backlog_messages / 10), [] {
    const auto start = std::chrono::steady_clock::now();
    ::malloc_trim(0);
    dde::logger("mqs")->debug(
        "enqueue backlog drained after a burst: free memory given back in {} µs",
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
            .count());
  });
  // Lease copies and dead-lettered copies: the MQS's own at-least-once messages.
  dequeuer_.set_publisher([this](std::vector<outgoing_message>&& messages) {
    std::size_t bytes = 0;
    for (auto& m : messages) bytes += m.body.size();
    flow_.add(messages.size(), bytes);
    enqueuer_.submit(std::move(messages));
  });
}

service::~service() { stop(); }

void service::start(boost::asio::io_context* io) {
  if (io && !cfg_.enqueuer_thread && !cfg_.broker_tls)
    enqueuer_.start(*io);
  else
    enqueuer_.start();
  if (io && !cfg_.dequeuer_thread)
    dequeuer_.start(*io);
  else
    dequeuer_.start();
}

void service::stop() {
  enqueuer_.stop();
  dequeuer_.stop();
}

std::shared_ptr<service::session> service::find(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

std::size_t service::clients() {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

net::readiness service::readiness() const {
  net::readiness r;
  std::string nodes;
  for (auto& node : cfg_.brokers) nodes += (nodes.empty() ? "" : ",") + node.str();
  r.details["broker"] = nodes;
  int node = enqueuer_.node();
  if (node >= 0 && std::size_t(node) < cfg_.brokers.size())
    r.details["publishing_node"] = cfg_.brokers[node].str();
  std::string connections;
  for (auto& [on, count] : mqs_metrics::process().connections_per_node())
    connections += (connections.empty() ? "" : ",") + on + "=" + std::to_string(count);
  r.details["connections"] = connections;
  if (auto stalled = dequeuer_.stall_report(); !stalled.empty()) {
    r.degraded = true;
    r.reason = "consumers stalled (hosts hold credit, messages ready, nothing delivered): " + stalled;
  }
  if (enqueuer_.connected()) return r;
  r.ready = false;
  r.reason = cfg_.brokers.size() > 1 ? "no broker node of " + nodes + " is reachable"
                                     : "broker " + nodes + " unreachable";
  return r;
}

void service::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  {
    std::lock_guard lock(mutex_);
    sessions_[conn->id()] = std::make_shared<session>();
  }
  log().debug("host connected from {} (connection {})", conn->remote(), conn->id());
}

void service::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  std::shared_ptr<session> s;
  {
    std::lock_guard lock(mutex_);
    if (auto it = sessions_.find(conn->id()); it != sessions_.end()) {
      s = it->second;
      sessions_.erase(it);
    }
  }
  flow_.forget(conn->id());
  dequeuer_.submit({dequeue::disconnect{conn}});
  if (s && s->hello)
    log().info("host {} ({}) at {} disconnected: {}", s->system, s->instance, conn->remote(), reason);
  else
    log().debug("connection {} from {} closed: {}", conn->id(), conn->remote(), reason);
}

}  // namespace dde::mqs
