// What the broker answers a publish, and what goes back: each host's confirms and rejects, the
// messages the broker nacked published again, and the publishing connection replaced when the
// broker keeps nacking or stops confirming.
#include <algorithm>
#include <span>
#include <unordered_map>

#include "dde/log.hpp"
#include "dde/mqs/broker_props.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "enqueuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {

void enqueuer::retry_nacked(std::vector<outgoing_message> nacked) {
  if (nacked.empty()) return;
  logger("mqs.enqueuer")
      ->warn("the broker nacked {} message(s) (first to {}); publishing them again in 200 ms", nacked.size(),
             nacked.front().topic);
  // Published again in the order they were first published (a host's seqs grow with its sends; a
  // multiple nack may list them in any order).
  std::stable_sort(nacked.begin(), nacked.end(), [](const outgoing_message& a, const outgoing_message& b) {
    return a.conn == b.conn ? a.seq < b.seq : a.conn.get() < b.conn.get();
  });
  for (auto& m : nacked) {
    mark_resent(m.props);      // a nack does not promise the broker kept no copy
    declared_.erase(m.topic);  // the queue may have gone: declare it again before the retry
    retry_.emplace_back(now() + std::chrono::milliseconds(200), std::move(m));
  }
  // A channel that published to a quorum queue while its leader's node was dying can go on being
  // nacked after a new leader is elected (RabbitMQ 3.10); a new connection is not. So when nacks
  // keep coming for a while (publishes to other queues may still be confirmed meanwhile), the
  // connection is replaced (on a cluster, by one to the next node).
  auto t = now();
  if (!refusing_since_ || t - last_nack_ > refusing_pause) refusing_since_ = t;
  last_nack_ = t;
  if (t - *refusing_since_ >= refusing_limit)
    lost("the broker has kept nacking publishes for " + std::to_string(refusing_limit.count()) + " ms");
}

void enqueuer::flush_replies() {
  if (confirmed_.empty() && refused_.empty()) return;
  struct reply {
    std::shared_ptr<net::ws_connection> conn;
    std::vector<std::uint64_t> seqs;
    std::string extra;
  };
  std::unordered_map<net::ws_connection*, reply> by_conn;
  for (auto& m : confirmed_) {
    flow_.remove(1, m.body.size());
    if (m.settled) {
      m.settled(true);
      continue;
    }
    counted_(m.topic).published.add();
    auto& r = by_conn[m.conn.get()];
    if (!r.conn) r.conn = m.conn;
    r.seqs.push_back(m.seq);
  }
  confirmed_.clear();
  for (auto& [m, error] : refused_) {
    if (m.settled) {
      logger("mqs.enqueuer")->warn("could not publish to {}: {}", m.topic, error);
      m.settled(false);
      continue;
    }
    auto& r = by_conn[m.conn.get()];
    if (!r.conn) r.conn = m.conn;
    std::uint64_t seq = m.seq;
    append_reject(r.extra, std::span<const std::uint64_t>(&seq, 1), error);
  }
  refused_.clear();
  for (auto& [ptr, r] : by_conn) {
    if (!r.conn) continue;
    std::string out;
    if (!r.seqs.empty()) append_confirm(out, r.seqs);
    out += r.extra;
    r.conn->send(std::move(out), true);
  }
}

void enqueuer::confirms_overdue() {
  // Twice as long after each replacement that brought no confirm (up to 8 times): when the queue's
  // leader itself is what does not answer, no node confirms, and moving on only sends copies again.
  auto limit = cfg_.confirm_timeout * (1 << std::min(overdue_in_a_row_, 3));
  if (cfg_.confirm_timeout.count() == 0 || blocked_ || unconfirmed_.size() == 0 ||
      now() - last_settled_ < limit)
    return;
  ++overdue_in_a_row_;
  lost(std::to_string(unconfirmed_.size()) + " messages had no confirm for " + std::to_string(limit.count()) +
       " ms");
}

void enqueuer::on_method(std::uint16_t channel, const amqp_method_t& method,
                         std::vector<outgoing_message>& nacked) {
  switch (method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      auto* m = static_cast<amqp_basic_ack_t*>(method.decoded);
      if (channel == confirm_channel) unconfirmed_.settle(m->delivery_tag, m->multiple, confirmed_);
      last_settled_ = now();
      overdue_in_a_row_ = 0;
      break;
    }
    case AMQP_BASIC_NACK_METHOD: {
      auto* m = static_cast<amqp_basic_nack_t*>(method.decoded);
      if (channel == confirm_channel) unconfirmed_.settle(m->delivery_tag, m->multiple, nacked);
      last_settled_ = now();
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      if (channel == pause_publisher::channel) {  // only pauses used it: keep the connection
        session_->reply_channel_close_ok(channel);
        pauses_.on_channel_closed(amqp_session::describe_close(method));
        break;
      }
      auto why = "channel " + std::to_string(channel) +
                 " closed by the broker: " + amqp_session::describe_close(method);
      session_->reply_channel_close_ok(channel);
      lost(why);
      break;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      auto why = "closed by the broker: " + amqp_session::describe_close(method);
      session_->reply_connection_close_ok();
      lost(why);
      break;
    }
    case AMQP_CONNECTION_BLOCKED_METHOD: {
      auto* m = static_cast<amqp_connection_blocked_t*>(method.decoded);
      logger("mqs.enqueuer")
          ->warn("the broker blocks publishing: {}",
                 std::string(static_cast<const char*>(m->reason.bytes), m->reason.len));
      blocked_ = true;
      break;
    }
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      logger("mqs.enqueuer")->info("the broker unblocked publishing");
      blocked_ = false;
      last_settled_ = now();  // the wait for confirms starts again
      break;
    default: break;
  }
}

}  // namespace dde::mqs
