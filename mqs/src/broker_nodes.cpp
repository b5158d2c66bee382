// The broker address list: a connection goes to the first node of a cluster that lets it in.
#include "amqp_session.hpp"
#include "dde/net/ws.hpp"
#include "mqs_metrics.hpp"
#include "rabbitmq_session.hpp"

namespace dde::mqs {

amqp_session::~amqp_session() {
  if (on_node_) on_node_->add(-1);
}

void amqp_session::settle_on(std::string node, std::size_t index) {
  node_ = std::move(node);
  node_index_ = index;
  on_node_ = &mqs_metrics::process().broker_connections(node_);
  on_node_->add();
}

std::unique_ptr<amqp_session> amqp_session::open(const broker_params& p, std::string& error) {
  if (p.nodes.empty()) {
    auto s = rabbitmq_session::open_node(p, error);
    if (s) s->settle_on(net::host_port(p.host, p.port), 0);
    return s;
  }
  // Each node once, from the first one asked for: a node that is down refuses at once, and the
  // next one is tried without waiting for a retry.
  std::string errors;
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    std::size_t index = (p.first_node + i) % p.nodes.size();
    broker_params one = p;
    one.host = p.nodes[index].host;
    one.port = p.nodes[index].port;
    std::string why;
    if (auto s = rabbitmq_session::open_node(one, why)) {
      s->settle_on(p.nodes[index].str(), index);
      return s;
    }
    errors += (errors.empty() ? "" : "; ") + why;
  }
  error = errors;
  return nullptr;
}

broker_params broker_params_for(const config& cfg, std::string connection_name, std::uint16_t heartbeat_s) {
  broker_params params{cfg.broker_host, cfg.broker_port,           {}, 0, cfg.user, cfg.password, cfg.vhost,
                       heartbeat_s,     std::move(connection_name)};
  params.nodes = cfg.brokers;
  params.tls = cfg.broker_tls;
  params.ca_file = cfg.broker_ca;
  params.cert_file = cfg.broker_cert;
  params.key_file = cfg.broker_key;
  return params;
}

}  // namespace dde::mqs
