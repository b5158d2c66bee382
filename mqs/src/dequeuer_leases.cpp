// The dequeuer's side of leases (mqs/PROTOCOL.md "Leases"): each at-least-once topic's channel
// also consumes the topic's lease queue, and the MQS's own messages (lease copies, dead-lettered
// copies) go out through the enqueuer, whose confirms come back through the inbox.
#include <charconv>

#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dequeuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {
namespace {

/// The header of a lease copy naming the delivery it stands for.
constexpr std::string_view lease_header = "x-dde-lease";

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dequeuer");
  return l;
}

std::optional<std::uint64_t> lease_id_of(const message_props& props) {
  for (auto& [key, value] : props.headers) {
    if (key != lease_header) continue;
    std::uint64_t id = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
    if (ec == std::errc() && end == value.data() + value.size() && id != 0) return id;
  }
  return std::nullopt;
}

}  // namespace

void dequeuer::drop_lease_header(message_props& props) {
  // A message that came back to the pool's queue from another MQS's lease queue (that MQS died)
  // still carries that MQS's number. It is the MQS's own mark: a host never sees it, and a lease
  // copy of this delivery names this MQS's delivery alone.
  std::erase_if(props.headers, [](const auto& h) { return h.first == lease_header; });
}

void dequeuer::on_lease_copy(channel_state& ch) {
  ch.lease_copy = false;
  auto id = lease_id_of(ch.props);
  if (!id) {
    // Not one of ours: the lease queue gives it to the topic's queue.
    log()->warn("a message in the lease queue of {} names no delivery: returned to {}", ch.topic, ch.topic);
    reject(ch.ref, false);
    return;
  }
  log()->debug("lease copy of delivery {} of {} arrived (tag {}{})", *id, ch.topic, ch.ref.tag,
               ch.redelivered ? ", redelivered" : "");
  dispatcher_.on_lease_copy(ch.topic, ch.ref, *id, now());
}

void dequeuer::publish_lease(const std::string& topic, std::uint64_t id, const std::string& body,
                             const message_props& props) {
  mqs_metrics::process().topic(topic).leases.add();
  log()->debug("renewing the lease of delivery {} of {}: publishing a copy", id, topic);
  outgoing_message m;
  m.topic = lease_topic(mqs_id_, cfg_.lease.count(), topic);
  m.mode = delivery_mode::at_least_once;
  m.body = body;
  m.props = props;  // without an x-dde-lease: dropped as the delivery arrived (drop_lease_header)
  m.props.headers.emplace_back(std::string(lease_header), std::to_string(id));
  m.settled = [this, id](bool ok) { submit({dequeue::leased{id, ok}}); };
  own_messages_.add(std::move(m));
}

void dequeuer::dead_letter_copy(const std::string& topic, const std::string& body, const message_props& props,
                                const broker_ref& ref) {
  outgoing_message m;
  m.topic = dead_letter_topic(topic);
  m.mode = delivery_mode::at_least_once;
  m.body = body;
  m.props = props;
  m.settled = [this, ref](bool ok) { submit({dequeue::dead_lettered{ref, ok}}); };
  own_messages_.add(std::move(m));
}

void dequeuer::handle(dequeue::leased& c, clock::time_point now) {
  log()->debug("the broker {} the lease copy of delivery {}", c.confirmed ? "confirmed" : "refused", c.id);
  dispatcher_.lease_published(c.id, c.confirmed, now);
  if (!c.confirmed) timers_.sooner(timer::lease_check, now + std::chrono::seconds(1));
}

void dequeuer::handle(dequeue::dead_lettered& c, clock::time_point) {
  if (c.confirmed)
    ack(c.ref);  // dead-lettered: the copy goes
  else
    reject(c.ref, false);  // not dead-lettered: back to the topic's queue rather than lost
}

}  // namespace dde::mqs
