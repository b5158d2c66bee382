// The dequeuer's pauses: a private queue bound to the governance exchange (server-named,
// exclusive, auto-delete, consumed without acks on a channel of the main consuming connection, made
// again after a reconnect), and telling hosts of pauses, their own MQS's and other MQS processes'.
#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dequeuer.hpp"
#include "pause_broadcast.hpp"

namespace dde::mqs {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.governance");
  return l;
}

}  // namespace

void dequeuer::retry_governance(clock::time_point now) {
  if (main_.channel || !timers_.due(timer::governance_retry, now) || !main_.usable()) return;
  auto err = setup_governance();
  if (err.empty() || !main_.usable()) return;
  auto delay = pauses_.retry.next();
  log()->error("{}; pauses of other MQS processes do not reach this one's hosts; retrying in {} ms", err,
               delay.count());
  timers_.set(timer::governance_retry, now + delay);
}

std::string dequeuer::setup_governance() {
  std::uint16_t ch = allocate_channel();
  std::uint64_t epoch = channels_.next_epoch();
  std::string tag = "dde-mqs.governance." + std::to_string(epoch);
  std::string queue;
  auto& s = *main_.session;
  auto r = s.open_channel(ch);
  // Durable like the enqueuer's declaration (the arguments must match); nothing in it is persisted.
  if (r.ok()) r = s.declare_exchange(ch, governance_exchange, "fanout", true);
  if (r.ok()) r = s.declare_private_queue(ch, queue);
  if (r.ok()) r = s.bind(ch, queue, governance_exchange, "");
  if (r.ok()) r = s.consume(ch, queue, tag, true);
  if (main_.lost(r)) return {};
  if (!r.ok()) return "cannot consume pauses: " + r.error;  // the broker closed the channel
  auto& state = channels_.add(epoch, std::string(), epoch, tag, main_, ch);
  state.governance = true;
  main_.channel = ch;
  main_.epoch = epoch;
  pauses_.retry.reset();
  log()->debug("consuming pauses from {} through queue {} on channel {}", governance_exchange, queue, ch);
  return {};
}

void dequeuer::on_governance_message(const std::string& body) {
  auto decoded = decode_pause_broadcast(body);
  if (!decoded.pause) {
    auto n = ++pauses_.ignored;
    if ((n & (n - 1)) == 0)  // 1, 2, 4, 8...: the count without flooding the log
      log()->warn("ignored {} message(s) on {} that are not pauses; last: {} ({} bytes)", n,
                  governance_exchange, decoded.error, body.size());
    return;
  }
  auto& p = *decoded.pause;
  if (p.mqs == mqs_id_) return;  // our own, back from the broker: our hosts were told already
  auto remaining = remaining_time(p, epoch_ms_now());
  std::vector<pause_notice> notices;
  if (pauses_.board.pause(p.topic, remaining, p.reason, p.origin, now(), notices))
    log()->debug("pause of {} for {} ms from {}: told {} host(s)", p.topic, remaining.count(), p.origin,
                 notices.size());
  tell(notices);
}

void dequeuer::tell(const std::vector<pause_notice>& notices) {
  for (auto& n : notices) {
    auto* out = hosts_.records(n.client);
    if (!out) continue;
    append_pause(*out, n.topic, std::uint64_t(n.remaining.count()), n.reason, n.origin);
  }
}

}  // namespace dde::mqs
