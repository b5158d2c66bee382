// Rate-limit governance: a worker that was rate limited (its plugin called backoff/rate_limited)
// pauses the whole pool, here and, through the MQS, in every replica; the message is tried again
// by the same worker after the pause, up to the retry limit, then dead-lettered.
#include <algorithm>
#include <boost/asio/post.hpp>

#include "dde/log.hpp"
#include "host/router.hpp"

namespace dde::host {

void router::worker_rate_limited(std::size_t index, std::uint64_t delivery_id,
                                 std::chrono::milliseconds delay, std::string reason, message m) {
  boost::asio::post(strand_, [self = shared_from_this(), index, delivery_id, delay,
                              reason = std::move(reason), m = std::move(m)]() mutable {
    ++self->figures_.count().rate_limited;
    // The whole pool pauses, here and (through the MQS) in every replica, not only the worker that was hit.
    self->pause_pool(std::clamp(delay, std::chrono::milliseconds(0), self->spec_.backoff.max_delay), reason,
                     true);
    auto it = self->deliveries_.find(delivery_id);
    if (it == self->deliveries_.end()) return;
    auto& d = it->second;
    if (std::find(d.pending.begin(), d.pending.end(), index) == d.pending.end()) return;
    if (d.attempts < self->spec_.backoff.retry_limit && !self->lifecycle_.stopping()) {
      // Tried again by the same worker once the pause is over (its gate holds it until then); it keeps
      // its place in the pool's accounting meanwhile.
      ++d.attempts;
      ++self->figures_.count().retries;
      self->watch_.active(index);
      self->slots_[index].worker->post_message(std::move(m), delivery_id);
      return;
    }
    auto why = "rate limited " + std::to_string(d.attempts + 1) + " time(s), retry limit " +
               std::to_string(self->spec_.backoff.retry_limit) + " reached; last reason: " + reason;
    if (self->lifecycle_.stopping()) {
      self->finish_one(index, delivery_id, true, false);  // back to the broker: another replica may take it
      return;
    }
    self->dead_letter(m, d.attempts + 1, why);
    self->finish_one(index, delivery_id, false, false);  // acked: it is in the dead-letter queue now
  });
}

void router::pause_pool(std::chrono::milliseconds delay, const std::string& reason, bool broadcast) {
  if (delay.count() <= 0) return;
  // The gate keeps real time: it holds the workers' threads, which no test clock drives.
  auto until = std::chrono::steady_clock::now() + delay;
  gate_->pause_until(until);  // the worker's cell may have paused it already
  // One announcement per extension of the pause, however many workers were hit.
  if (!governor_.extend(until, reason, broadcast)) return;
  logger("host.router")
      ->warn("{}: rate limited ({}): no message starts for {} ms{}", spec_.addr().str(), reason,
             delay.count(), broadcast ? "" : " (paused by a replica)");
  if (broadcast) top_->pause(topic_, delay, reason);
}

void router::on_pause(std::chrono::milliseconds delay, std::string reason, std::string origin) {
  boost::asio::post(
      strand_, [self = shared_from_this(), delay, reason = std::move(reason), origin = std::move(origin)] {
        if (self->lifecycle_.stopping()) return;
        // Our own announcement comes back too: it changes nothing.
        if (pause_governor::is_own(origin, self->top_->instance())) return;
        self->pause_pool(std::min(delay, self->spec_.backoff.max_delay), reason + " [from " + origin + "]",
                         false);
      });
}

void router::dead_letter(const message& m, int attempts, const std::string& reason) {
  top_->enqueue(dead_letter_topic(topic_), delivery_mode::at_least_once, {},
                dead_letter_body(m, attempts, reason));
}

std::string router::dead_letter_body(const message& m, int attempts, const std::string& reason) {
  auto e = to_envelope(m);
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  e.dead_letter = {
      {"reason", reason}, {"attempts", attempts}, {"pool", spec_.addr().str()}, {"at", at.count()}};
  if (hot_.plugin()) e.dead_letter["md5"] = hot_.md5();  // the version that failed it (ddectl dlq list)
  ++figures_.count().dead_lettered;
  logger("host.router")
      ->error("{}: message {} dead-lettered to dde.dead.{}: {}", spec_.addr().str(), m.id(), topic_, reason);
  // Whole, as JSON in the body: whoever inspects a dead-letter queue sees every field in one place.
  return encode_envelope(e);
}

}  // namespace dde::host
