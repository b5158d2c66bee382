#include "service.hpp"

#include <malloc.h>

#include "dde/log.hpp"
#include "dde/mqs/batch_reader.hpp"
#include "dde/mqs/pause_broadcast.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/wire/record.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs");
  return l;
}

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

}  // namespace

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
  log()->debug("host connected from {} (connection {})", conn->remote(), conn->id());
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
  std::vector<dequeue_command> cmds(1);
  cmds[0].what = dequeue_command::kind::disconnect;
  cmds[0].conn = conn;
  dequeuer_.submit(std::move(cmds));
  if (s && s->hello)
    log()->info("host {} ({}) at {} disconnected: {}", s->system, s->instance, conn->remote(), reason);
  else
    log()->debug("connection {} from {} closed: {}", conn->id(), conn->remote(), reason);
}

void service::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) {
  if (!binary) {
    conn->send(text_error("text messages are not part of the protocol: send binary record batches"), false);
    return;
  }
  auto s = find(conn->id());
  if (!s) return;

  std::string reply;
  std::vector<outgoing_message> enqueues;
  std::vector<dequeue_command> commands;
  std::vector<pause_broadcast> pauses;
  std::vector<depth_query> depths;
  std::size_t enqueued_bytes = 0;
  bool close_after = false;
  std::size_t errors = 0;
  std::string first_error;
  auto refuse = [&](batch_entry& e, const std::string& error, std::optional<std::uint64_t> seq) {
    if (errors++ == 0) first_error = error;
    if (seq) append_reject(reply, std::span<const std::uint64_t>(&*seq, 1), error);
    append_error(reply, error, e.index, &e.header());
  };

  batch_reader reader(data, cfg_.max_message);
  batch_entry e;
  while (!close_after && reader.next(e)) {
    if (!e.error.empty()) {  // the header is JSON or not; an enqueue's seq is rejected
      bool is_enqueue = false;
      if (auto& h = e.header(); !h.is_discarded() && h.is_object())
        if (auto a = h.find("action"); a != h.end() && a->is_string()) is_enqueue = *a == "enqueue";
      refuse(e, e.error, is_enqueue ? enqueue_seq(e.header()) : std::nullopt);
      continue;
    }
    auto parsed =
        e.enqueue ? parsed_request{request(std::move(*e.enqueue)), {}, {}} : parse_request(e.header());
    if (!parsed.req) {
      refuse(e, parsed.error, parsed.reject_seq);
      continue;
    }
    if (!s->hello && !std::holds_alternative<hello_request>(*parsed.req)) {
      auto* q = std::get_if<enqueue_request>(&*parsed.req);
      refuse(e, "the first record must be a hello", q ? q->seq : std::nullopt);
      continue;
    }
    std::visit(
        overloaded{
            [&](hello_request& h) {
              if (h.protocol != wire::protocol_version) {
                append_error(reply,
                             "protocol " + std::to_string(h.protocol) +
                                 " is not supported: this MQS speaks " +
                                 std::to_string(wire::protocol_version),
                             e.index, &e.header());
                close_after = true;
                return;
              }
              if (s->hello) {
                append_error(reply, "hello was already received on this connection", e.index, &e.header());
                return;
              }
              s->hello = true;
              s->binary_deliver = h.binary_deliver;
              s->system = h.system;
              s->instance = h.instance;
              append_welcome(reply, id_, h.binary_deliver);
              log()->info("host {} ({}) connected from {}", h.system, h.instance, conn->remote());
            },
            [&](enqueue_request& q) {
              if (q.mode != delivery_mode::at_least_once && flow_.full() && !enqueuer_.connected()) {
                auto n = ++dropped_;
                if ((n & (n - 1)) == 0)  // 1, 2, 4, 8...: the count without flooding the log
                  log()->warn("broker unreachable and enqueue backlog full: dropped {} {} message(s) so far",
                              n, to_string(q.mode));
                return;
              }
              enqueued_bytes += e.body.size();
              enqueues.push_back(outgoing_message{conn,
                                                  std::move(q.topic),
                                                  q.mode,
                                                  q.seq.value_or(0),
                                                  std::string(e.body),
                                                  std::move(q.props),
                                                  {}});
            },
            [&](pull_request& p) {
              dequeue_command c;
              c.what = dequeue_command::kind::pull;
              c.conn = conn;
              c.topic = std::move(p.topic);
              c.mode = p.mode;
              c.credit = p.credit;
              c.consumers = p.consumers;
              c.binary_deliver = s->binary_deliver;
              c.record = e.index;
              commands.push_back(std::move(c));
            },
            [&](ack_request& a) {
              dequeue_command c;
              c.what = dequeue_command::kind::ack;
              c.conn = conn;
              c.tags = std::move(a.tags);
              commands.push_back(std::move(c));
            },
            [&](nack_request& n) {
              dequeue_command c;
              c.what = dequeue_command::kind::nack;
              c.conn = conn;
              c.tags = std::move(n.tags);
              c.requeue = n.requeue;
              commands.push_back(std::move(c));
            },
            [&](cancel_request& k) {
              dequeue_command c;
              c.what = dequeue_command::kind::cancel;
              c.conn = conn;
              c.topic = std::move(k.topic);
              commands.push_back(std::move(c));
            },
            [&](depth_request& d) {
              depths.push_back(depth_query{conn, std::move(d.topic)});
            },
            [&](pause_request& p) {
              log()->info("host {} ({}) pauses {} for {} ms: {}", s->system, s->instance, p.topic, p.ms,
                          p.reason.substr(0, 200));
              dequeue_command c;
              c.what = dequeue_command::kind::pause;
              c.conn = conn;
              c.topic = p.topic;
              c.pause_ms = std::chrono::milliseconds(p.ms);
              c.reason = p.reason;
              c.origin = id_ + "/" + s->instance;
              pauses.push_back(pause_broadcast{std::move(p.topic), p.ms, epoch_ms_now() + p.ms,
                                               std::move(p.reason), c.origin, id_});
              commands.push_back(std::move(c));
            },
        },
        *parsed.req);
  }

  if (!enqueues.empty()) {
    flow_.add(enqueues.size(), enqueued_bytes);
    enqueuer_.submit(std::move(enqueues));
    flow_.pause_if_full(conn);
  }
  if (!commands.empty()) dequeuer_.submit(std::move(commands));
  // After the hosts of this MQS (above): they must not wait for the broker, which may be down.
  for (auto& p : pauses) enqueuer_.broadcast(std::move(p));
  if (!depths.empty()) enqueuer_.ask_depth(std::move(depths));
  if (errors && log()->should_log(spdlog::level::debug))
    log()->debug("{} bad record(s) from {} ({}): first: {}", errors, conn->remote(), s->system, first_error);
  if (!reply.empty()) conn->send(std::move(reply), true);
  if (close_after) conn->close("protocol mismatch");
}

}  // namespace dde::mqs
