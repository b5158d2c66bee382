// One binary message of a host, read record by record: one handler per request type. What the
// records ask of the enqueuer and the dequeuer is gathered and handed over once the whole batch is
// read (one submit each, not one a record), and the reply (welcome, rejects, errors) goes as one
// WebSocket message.
#include "batch_reader.hpp"
#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "dde/wire/record.hpp"
#include "pause_broadcast.hpp"
#include "service.hpp"

namespace dde::mqs {
struct service::batch {
  batch(service& svc, session& s, const std::shared_ptr<net::ws_connection>& conn)
      : svc(svc), s(s), conn(conn) {}

  service& svc;
  session& s;
  const std::shared_ptr<net::ws_connection>& conn;
  batch_entry e;  ///< the record being handled
  std::string reply;
  std::vector<outgoing_message> enqueues;
  std::size_t enqueued_bytes = 0;
  std::vector<dequeue_command> commands;
  std::vector<pause_broadcast> pauses;
  std::vector<depth_query> depths;
  bool close_after = false;  ///< a protocol mismatch: the rest of the batch is not read
  std::size_t errors = 0;
  std::string first_error;

  void read(const std::string& data);
  void hand_over();
  /// An error record for the record being handled, and a reject of its `seq` (an enqueue's).
  void refuse(const std::string& error, std::optional<std::uint64_t> seq);

  void operator()(hello_request& h);
  void operator()(enqueue_request& q);
  void operator()(pull_request& p);
  void operator()(ack_request& a);
  void operator()(nack_request& n);
  void operator()(cancel_request& k);
  void operator()(depth_request& d) { depths.push_back(depth_query{conn, std::move(d.topic)}); }
  void operator()(pause_request& p);
};

void service::batch::refuse(const std::string& error, std::optional<std::uint64_t> seq) {
  if (errors++ == 0) first_error = error;
  if (seq) append_reject(reply, std::span<const std::uint64_t>(&*seq, 1), error);
  append_error(reply, error, e.index, &e.header());
}

void service::batch::read(const std::string& data) {
  batch_reader reader(data, svc.cfg_.max_message);
  while (!close_after && reader.next(e)) {
    if (!e.error.empty()) {  // the header is JSON or not; an enqueue's seq is rejected
      bool is_enqueue = false;
      if (auto& h = e.header(); !h.is_discarded() && h.is_object())
        if (auto a = h.find("action"); a != h.end() && a->is_string()) is_enqueue = *a == "enqueue";
      refuse(e.error, is_enqueue ? enqueue_seq(e.header()) : std::nullopt);
      continue;
    }
    auto parsed =
        e.enqueue ? parsed_request{request(std::move(*e.enqueue)), {}, {}} : parse_request(e.header());
    if (!parsed.req) {
      refuse(parsed.error, parsed.reject_seq);
      continue;
    }
    if (!s.hello && !std::holds_alternative<hello_request>(*parsed.req)) {
      auto* q = std::get_if<enqueue_request>(&*parsed.req);
      refuse("the first record must be a hello", q ? q->seq : std::nullopt);
      continue;
    }
    std::visit(*this, *parsed.req);
  }
}

void service::batch::operator()(hello_request& h) {
  if (h.protocol != wire::protocol_version) {
    append_error(reply,
                 "protocol " + std::to_string(h.protocol) + " is not supported: this MQS speaks " +
                     std::to_string(wire::protocol_version),
                 e.index, &e.header());
    close_after = true;
    return;
  }
  if (s.hello) {
    append_error(reply, "hello was already received on this connection", e.index, &e.header());
    return;
  }
  s.hello = true;
  s.binary_deliver = h.binary_deliver;
  s.system = h.system;
  s.instance = h.instance;
  append_welcome(reply, svc.id_, h.binary_deliver);
  log().info("host {} ({}) connected from {}", h.system, h.instance, conn->remote());
}

void service::batch::operator()(enqueue_request& q) {
  if (q.mode != delivery_mode::at_least_once && svc.flow_.full() && !svc.enqueuer_.connected()) {
    auto n = ++svc.dropped_;
    if ((n & (n - 1)) == 0)  // 1, 2, 4, 8...: the count without flooding the log
      log().warn("broker unreachable and enqueue backlog full: dropped {} {} message(s) so far", n,
                 to_string(q.mode));
    return;
  }
  enqueued_bytes += e.body.size();
  enqueues.push_back(outgoing_message{
      conn, std::move(q.topic), q.mode, q.seq.value_or(0), std::string(e.body), std::move(q.props), {}});
  if (auto p = svc.partitions_.find(enqueues.back().topic)) {
    auto& m = enqueues.back();
    m.partition = partition_of(m.body, *p, m.props.message_id);
  }
}

void service::batch::operator()(pull_request& p) {
  if (p.partitions) svc.partitions_.learn(p.topic, {p.partitions, p.key});
  commands.emplace_back(dequeue::pull{conn, std::move(p.topic), p.mode, p.credit, p.consumers,
                                      s.binary_deliver, e.index, p.partitions, std::move(p.key)});
}

void service::batch::operator()(ack_request& a) {
  commands.emplace_back(dequeue::ack{conn, std::move(a.tags)});
}

void service::batch::operator()(nack_request& n) {
  commands.emplace_back(dequeue::nack{conn, std::move(n.tags), n.requeue});
}

void service::batch::operator()(cancel_request& k) {
  commands.emplace_back(dequeue::cancel{conn, std::move(k.topic)});
}

void service::batch::operator()(pause_request& p) {
  log().info("host {} ({}) pauses {} for {} ms: {}", s.system, s.instance, p.topic, p.ms,
             p.reason.substr(0, 200));
  auto origin = svc.id_ + "/" + s.instance;
  commands.emplace_back(dequeue::pause{p.topic, std::chrono::milliseconds(p.ms), p.reason, origin});
  pauses.push_back(pause_broadcast{std::move(p.topic), p.ms, epoch_ms_now() + p.ms, std::move(p.reason),
                                   std::move(origin), svc.id_});
}

void service::batch::hand_over() {
  if (!enqueues.empty()) {
    svc.flow_.add(enqueues.size(), enqueued_bytes);
    svc.enqueuer_.submit(std::move(enqueues));
    svc.flow_.pause_if_full(conn);
  }
  if (!commands.empty()) svc.dequeuer_.submit(std::move(commands));
  // After the hosts of this MQS (above): they must not wait for the broker, which may be down.
  for (auto& p : pauses) svc.enqueuer_.broadcast(std::move(p));
  if (!depths.empty()) svc.enqueuer_.ask_depth(std::move(depths));
  if (errors && log().should_log(spdlog::level::debug))
    log().debug("{} bad record(s) from {} ({}): first: {}", errors, conn->remote(), s.system, first_error);
  if (!reply.empty()) conn->send(std::move(reply), true);
  if (close_after) conn->close("protocol mismatch");
}

void service::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) {
  if (!binary) {
    conn->send(text_error("text messages are not part of the protocol: send binary record batches"), false);
    return;
  }
  auto s = find(conn->id());
  if (!s) return;
  batch b(*this, *s, conn);
  b.read(data);
  b.hand_over();
}

}  // namespace dde::mqs
