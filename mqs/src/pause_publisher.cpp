#include "pause_publisher.hpp"

#include "dde/log.hpp"

namespace dde::mqs {
namespace {

// Beyond this many topics with a pause waiting for one turn of the enqueuer, new ones are dropped.
constexpr std::size_t max_queued = 10000;

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.governance");
  return l;
}

}  // namespace

void pause_publisher::submit(pause_broadcast p) {
  std::lock_guard lock(mutex_);
  auto it = queued_.find(p.topic);
  if (it != queued_.end()) {
    if (p.deadline_ms > it->second.deadline_ms) it->second = std::move(p);
  } else if (queued_.size() < max_queued) {
    queued_.emplace(p.topic, std::move(p));
  }
}

void pause_publisher::on_channel_closed(const std::string& why) {
  ready_ = false;
  log()->warn("the broker closed the pause channel: {}; opened again for the next pause", why);
}

amqp_session::result pause_publisher::prepare(amqp_session& session) {
  auto r = session.open_channel(channel);
  // Durable: the exchange is there as soon as a restarted broker is, before any MQS declared it.
  if (r.ok()) r = session.declare_exchange(channel, governance_exchange, "fanout", true);
  if (r.ok()) {
    ready_ = true;
    if (failing_) log()->info("pauses are published to {} again", governance_exchange);
    failing_ = false;
  } else if (!r.connection_lost()) {
    if (!failing_)
      log()->error("cannot publish pauses to exchange {}: {}; pauses reach only this MQS's hosts",
                   governance_exchange, r.error);
    failing_ = true;  // the broker closed the channel: the next publish opens it again
  }
  return r;
}

amqp_session::result pause_publisher::publish(amqp_session* session) {
  std::map<std::string, pause_broadcast> pauses;
  {
    std::lock_guard lock(mutex_);
    pauses.swap(queued_);
  }
  if (pauses.empty()) return {};
  if (!session) {
    log()->debug("no broker connection: {} pause(s) reach only this MQS's hosts", pauses.size());
    return {};
  }
  auto now = epoch_ms_now();
  for (auto& [topic, p] : pauses) {
    if (p.deadline_ms <= now) continue;  // over already (the enqueuer was blocked): nothing to say
    if (!ready_) {
      if (auto r = prepare(*session); !r.ok()) return r.connection_lost() ? r : amqp_session::result{};
    }
    auto body = encode_pause_broadcast(p);
    auto expiration = std::to_string(p.deadline_ms - now);  // the broker drops it once it is stale
    amqp_session::publish_props props;
    props.content_type = "application/json";
    props.expiration = expiration;
    if (auto error = session->publish(channel, governance_exchange, topic, props, body); !error.empty()) {
      amqp_session::result r;
      r.error = error + " (pause)";
      return r;
    }
    log()->debug("published a pause of {} for {} ms from {}", topic, p.ms, p.origin);
  }
  return {};
}

}  // namespace dde::mqs
