#include "governance.hpp"

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/names.hpp"

namespace dde::host {

governance::governance(pool_spec& spec, mqs_link& link, pool_figures& figures)
    : spec_(spec),
      link_(link),
      figures_(figures),
      gate_(std::make_shared<rate_gate>(spec.rate_messages, spec.rate_per, spec.max_in_flight)) {}

void governance::set_rate(std::size_t messages, std::chrono::milliseconds per, std::size_t max_in_flight) {
  spec_.rate_messages = messages;
  spec_.rate_per = per;
  spec_.max_in_flight = max_in_flight;
  logger("host.router")
      ->info("{}: rate {} per {} ms, maxInFlight {} (0 = none)", spec_.addr().str(), messages, per.count(),
             max_in_flight);
  gate_->set(messages, per, max_in_flight);
}

void governance::pause(std::chrono::milliseconds delay, const std::string& reason, bool broadcast) {
  if (delay.count() <= 0) return;
  // The gate keeps real time: it holds the workers' threads, which no test clock drives.
  auto until = std::chrono::steady_clock::now() + delay;
  gate_->pause_until(until);  // the worker's cell may have paused it already
  // One announcement per extension of the pause, however many workers were hit.
  if (!governor_.extend(until, reason, broadcast)) return;
  logger("host.router")
      ->warn("{}: rate limited ({}): no message starts for {} ms{}", spec_.addr().str(), reason,
             delay.count(), broadcast ? "" : " (paused by a replica)");
  if (broadcast) link_.pause(spec_.addr().topic(), delay, reason);
}

void governance::paused_by(std::chrono::milliseconds delay, const std::string& reason,
                           const std::string& origin) {
  if (pause_governor::is_own(origin, link_.instance())) return;
  pause(std::min(delay, spec_.backoff.max_delay), reason + " [from " + origin + "]", false);
}

void governance::dead_letter(const message& m, int attempts, const std::string& reason,
                             const std::string& md5) {
  link_.enqueue(dead_letter_topic(spec_.addr().topic()), delivery_mode::at_least_once, {},
                dead_letter_body(m, attempts, reason, md5));
}

std::string governance::dead_letter_body(const message& m, int attempts, const std::string& reason,
                                         const std::string& md5) {
  auto e = to_envelope(m);
  auto at = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  e.dead_letter = {
      {"reason", reason}, {"attempts", attempts}, {"pool", spec_.addr().str()}, {"at", at.count()}};
  if (!md5.empty()) e.dead_letter["md5"] = md5;  // the version that failed it (ddectl dlq list)
  ++figures_.count().dead_lettered;
  logger("host.router")
      ->error("{}: message {} dead-lettered to dde.dead.{}: {}", spec_.addr().str(), m.id(),
              spec_.addr().topic(), reason);
  // Whole, as JSON in the body: whoever inspects a dead-letter queue sees every field in one place.
  return encode_envelope(e);
}

void governance::retry_later(const message& m, int failures, const std::string& failure,
                             const std::string& md5, std::function<void(bool)> settled) {
  const auto& delays = spec_.retry.delays;
  const auto topic = spec_.addr().topic();
  if (std::size_t(failures) > delays.size()) {
    auto body = dead_letter_body(
        m, failures,
        "failed " + std::to_string(failures) + " times (retry.delays spent); last failure: " + failure, md5);
    return link_.enqueue_then(dead_letter_topic(topic), {}, std::move(body), std::move(settled));
  }
  auto delay = delays[std::size_t(failures - 1)];
  auto e = to_envelope(m);
  e.attempt = failures;
  auto to = delay_topic(topic, delay.count());
  auto copy = split_envelope(e, to);
  ++figures_.count().delayed;
  logger("host.router")
      ->info("{}: message {} failed ({}); it comes back in {} ms (retry {} of {})", spec_.addr().str(),
             m.id(), failure, delay.count(), failures, delays.size());
  link_.enqueue_then(std::move(to), std::move(copy.props), std::move(copy.payload), std::move(settled));
}

nlohmann::json governance::describe() const {
  auto paused_for = std::chrono::duration_cast<std::chrono::milliseconds>(gate_->paused_until() -
                                                                          std::chrono::steady_clock::now());
  const auto& counts = figures_.counts();
  return {{"pausedForMs", std::max<long long>(0, paused_for.count())},
          {"lastPauseReason", governor_.reason()},
          {"rateLimited", counts.rate_limited},
          {"retries", counts.retries},
          {"deadLettered", counts.dead_lettered},
          {"delayedRetries", counts.delayed},
          {"pauses", governor_.pauses()},
          {"remotePauses", governor_.remote_pauses()}};
}

}  // namespace dde::host
