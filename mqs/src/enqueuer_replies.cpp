// What the broker answers a publish, and what goes back: each host's confirms and rejects, the
// messages the broker nacked published again, and the publishing connection replaced when the
// broker keeps nacking or stops confirming.
#include <algorithm>
#include <span>
#include <unordered_map>

#include "broker_props.hpp"
#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "enqueuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {

void enqueuer::mark_republished(outgoing_message& m) {
  mark_resent(m.props);
  counted_(m.topic).republished.add();
}

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
    mark_republished(m);  // a nack does not promise the broker kept no copy
    admin_.forget(m);     // the queue may have gone: declare it again before the retry
  }
  queues_.retry_at(std::move(nacked), now() + std::chrono::milliseconds(200));
  // A channel that published to a quorum queue while its leader's node was dying can go on being
  // nacked after a new leader is elected (RabbitMQ 3.10); a new connection is not. So when nacks
  // keep coming for a while (publishes to other queues may still be confirmed meanwhile), the
  // connection is replaced (on a cluster, by one to the next node).
  if (auto why = confirms_.nacks_came(now())) lost(*why);
}

void enqueuer::confirms_overdue() {
  if (auto why = confirms_.overdue(now())) lost(*why);
}

void enqueuer::on_method(std::uint16_t channel, const amqp_method_t& method,
                         std::vector<outgoing_message>& nacked) {
  switch (method.id) {
    case AMQP_BASIC_ACK_METHOD: {
      auto* m = static_cast<amqp_basic_ack_t*>(method.decoded);
      if (channel == confirm_channel)
        confirms_.settle(m->delivery_tag, m->multiple, true, replies_.confirmed(), now());
      else
        confirms_.answered(now(), true);
      break;
    }
    case AMQP_BASIC_NACK_METHOD: {
      auto* m = static_cast<amqp_basic_nack_t*>(method.decoded);
      if (channel == confirm_channel)
        confirms_.settle(m->delivery_tag, m->multiple, false, nacked, now());
      else
        confirms_.answered(now(), false);
      break;
    }
    case AMQP_CHANNEL_CLOSE_METHOD: {
      if (channel == pause_publisher::channel) {  // only pauses used it: keep the connection
        link_.session->reply_channel_close_ok(channel);
        pauses_.on_channel_closed(amqp_session::describe_close(method));
        break;
      }
      auto why = "channel " + std::to_string(channel) +
                 " closed by the broker: " + amqp_session::describe_close(method);
      link_.session->reply_channel_close_ok(channel);
      lost(why);
      break;
    }
    case AMQP_CONNECTION_CLOSE_METHOD: {
      auto why = "closed by the broker: " + amqp_session::describe_close(method);
      link_.session->reply_connection_close_ok();
      lost(why);
      break;
    }
    case AMQP_CONNECTION_BLOCKED_METHOD: {
      auto* m = static_cast<amqp_connection_blocked_t*>(method.decoded);
      logger("mqs.enqueuer")
          ->warn("the broker blocks publishing: {}",
                 std::string(static_cast<const char*>(m->reason.bytes), m->reason.len));
      confirms_.blocked();
      break;
    }
    case AMQP_CONNECTION_UNBLOCKED_METHOD:
      logger("mqs.enqueuer")->info("the broker unblocked publishing");
      confirms_.unblocked(now());
      break;
    default: break;
  }
}

}  // namespace dde::mqs
