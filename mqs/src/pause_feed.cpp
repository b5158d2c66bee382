#include "pause_feed.hpp"

#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "pause_broadcast.hpp"

namespace dde::mqs {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.governance");
  return l;
}

}  // namespace

void pause_feed::listen(client_id client, const std::string& topic, clock::time_point now) {
  std::vector<pause_notice> notices;  // a pause of the topic still running
  board_.listen(client, topic, now, notices);
  tell(notices);
}

void pause_feed::pause(const std::string& topic, std::chrono::milliseconds length, const std::string& reason,
                       const std::string& origin, clock::time_point now) {
  std::vector<pause_notice> notices;
  board_.pause(topic, length, reason, origin, now, notices);
  tell(notices);
}

amqp_session::result pause_feed::consume(amqp_session& session, std::uint16_t channel,
                                         const std::string& tag) {
  std::string queue;
  auto r = session.open_channel(channel);
  // Durable like the enqueuer's declaration (the arguments must match); nothing in it is persisted.
  if (r.ok()) r = session.declare_exchange(channel, governance_exchange, "fanout", true);
  if (r.ok()) r = session.declare_private_queue(channel, queue);
  if (r.ok()) r = session.bind(channel, queue, governance_exchange, "");
  if (r.ok()) r = session.consume(channel, queue, tag, true);
  if (r.ok()) {
    retry_.reset();
    log()->debug("consuming pauses from {} through queue {} on channel {}", governance_exchange, queue,
                 channel);
  }
  return r;
}

void pause_feed::heard(const std::string& body, clock::time_point now) {
  auto decoded = decode_pause_broadcast(body);
  if (!decoded.pause) {
    auto n = ++ignored_;
    if ((n & (n - 1)) == 0)  // 1, 2, 4, 8...: the count without flooding the log
      log()->warn("ignored {} message(s) on {} that are not pauses; last: {} ({} bytes)", n,
                  governance_exchange, decoded.error, body.size());
    return;
  }
  auto& p = *decoded.pause;
  if (p.mqs == mqs_id_) return;  // our own, back from the broker: our hosts were told already
  auto remaining = remaining_time(p, epoch_ms_now());
  std::vector<pause_notice> notices;
  if (board_.pause(p.topic, remaining, p.reason, p.origin, now, notices))
    log()->debug("pause of {} for {} ms from {}: told {} host(s)", p.topic, remaining.count(), p.origin,
                 notices.size());
  tell(notices);
}

void pause_feed::tell(const std::vector<pause_notice>& notices) {
  for (auto& n : notices) {
    auto* out = hosts_.records(n.client);
    if (!out) continue;
    append_pause(*out, n.topic, std::uint64_t(n.remaining.count()), n.reason, n.origin);
  }
}

}  // namespace dde::mqs
