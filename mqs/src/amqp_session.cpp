// A broker session as the MQS uses it: opened on the first node of a cluster that lets it in (the
// broker address list), counted per node, and what every session does the same way.
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

std::string amqp_session::describe_close(const amqp_method_t& method) {
  if (method.id == AMQP_CHANNEL_CLOSE_METHOD) {
    auto* m = static_cast<amqp_channel_close_t*>(method.decoded);
    return std::to_string(m->reply_code) + " " + bytes_text(m->reply_text);
  }
  if (method.id == AMQP_CONNECTION_CLOSE_METHOD) {
    auto* m = static_cast<amqp_connection_close_t*>(method.decoded);
    return std::to_string(m->reply_code) + " " + bytes_text(m->reply_text);
  }
  return "unexpected method " + std::to_string(method.id);
}

amqp_session::result amqp_session::declare_or_use(std::uint16_t channel, const queue_spec& spec,
                                                  bool& used_existing) {
  used_existing = false;
  auto r = declare(channel, spec, false);
  if (r.ok() || !r.channel_closed || r.code != AMQP_PRECONDITION_FAILED) return r;
  // The queue exists with other arguments: the broker closed the channel. Use the queue as it is.
  if (auto o = open_channel(channel); !o.ok()) return o;
  r = declare(channel, spec, true);
  if (r.ok()) used_existing = true;
  return r;
}

// What only a real broker does; a test session that needs it overrides it.
amqp_session::result amqp_session::get_message(std::uint16_t, const std::string&, dead_message&, bool&) {
  return {"basic.get: not supported by this session"};
}

amqp_session::result amqp_session::purge(std::uint16_t, const std::string&, std::uint32_t&) {
  return {"queue.purge: not supported by this session"};
}

std::string amqp_session::nack(std::uint16_t, std::uint64_t, bool, bool) {
  return "basic.nack: not supported";
}

amqp_session::result amqp_session::wait_confirms(std::uint16_t, std::uint64_t, std::chrono::milliseconds) {
  return {"confirms: not supported by this session"};
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
