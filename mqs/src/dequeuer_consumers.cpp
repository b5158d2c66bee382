// The dequeuer's consumers: one channel per topic, opened on the first pull, closed when idle,
// opened again after the broker cancelled it or the connection came back.
#include "dde/log.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dequeuer.hpp"

namespace dde::mqs {
namespace {

std::shared_ptr<spdlog::logger> log() {
  static auto l = dde::logger("mqs.dequeuer");
  return l;
}

}  // namespace

std::uint16_t dequeuer::allocate_channel() {
  std::uint16_t max = std::min<std::uint16_t>(session_->channel_max(), 65535);
  if (max == 0) max = 65535;
  // Numbers are not reused at once, so frames still queued for a closed channel cannot be taken
  // for those of a new one (the consumer tag is checked as well).
  for (std::uint32_t tries = 0; tries < max; ++tries) {
    std::uint16_t ch = next_channel_;
    next_channel_ = next_channel_ >= max ? 1 : next_channel_ + 1;
    if (!channels_.count(ch)) return ch;
  }
  return 0;
}

std::string dequeuer::setup(const std::string& topic, consumer& c) {
  std::uint16_t ch = allocate_channel();
  if (ch == 0) return "no free AMQP channel";
  std::uint64_t epoch = next_epoch_++;
  std::string tag = "dde-mqs." + topic + "." + std::to_string(epoch);
  auto r = session_->open_channel(ch);
  std::vector<queue_spec> specs;
  if (auto dl = dead_letter_spec_for(topic, c.mode)) specs.push_back(*dl);
  specs.push_back(spec_for(topic, c.mode));
  for (auto& spec : specs) {
    if (!r.ok()) break;
    bool existing = false;
    r = session_->declare_or_use(ch, spec, existing);
    if (r.ok() && existing)
      log()->warn("queue {} exists with other arguments than the MQS would give it for {}: using it as it is",
                  spec.name, to_string(c.mode));
  }
  if (r.ok()) r = session_->qos(ch, cfg_.prefetch);
  if (r.ok()) r = session_->consume(ch, topic, tag);
  if (r.connection_lost()) {
    failed_ = r.error;
    return {};
  }
  if (!r.ok()) {
    if (!r.channel_closed) session_->close_channel(ch);
    return "cannot consume " + topic + ": " + r.error;
  }
  channels_.try_emplace(ch, topic, epoch, tag, ch);
  c.channel = ch;
  c.retry_delay = std::chrono::milliseconds(1000);
  log()->debug("consuming {} ({}) on channel {} with prefetch {}", topic, to_string(c.mode), ch,
               cfg_.prefetch);
  return {};
}

void dequeuer::retry_consumers(clock::time_point now) {
  for (auto& [topic, c] : consumers_) {
    if (c.channel || now < c.retry_at || !failed_.empty()) continue;
    auto err = setup(topic, c);
    if (!err.empty()) {
      log()->error("{}; retrying in {} ms", err, c.retry_delay.count());
      c.retry_at = now + c.retry_delay;
      c.retry_delay = std::min(c.retry_delay * 2, std::chrono::milliseconds(30000));
    }
  }
}

std::string dequeuer::start_consumer(const std::string& topic, delivery_mode mode) {
  auto [it, fresh] = consumers_.try_emplace(topic);
  it->second.mode = mode;
  if (!session_ || !failed_.empty()) return {};  // consumed once the broker is back
  auto err = setup(topic, it->second);
  if (!err.empty()) {
    log()->error("{}", err);
    consumers_.erase(it);
  }
  return err;
}

void dequeuer::stop_consumer(const std::string& topic) {
  auto it = consumers_.find(topic);
  if (it == consumers_.end()) return;
  std::uint16_t ch = it->second.channel;
  consumers_.erase(it);
  if (!ch) return;
  log()->debug("closing the idle dequeuer of {}", topic);
  drop_channel(ch, {}, true);
}

void dequeuer::drop_channel(std::uint16_t ch, const std::string& why, bool close) {
  auto it = channels_.find(ch);
  if (it == channels_.end()) return;
  if (close && session_ && failed_.empty()) {
    it->second.acks.flush(*this);  // what hosts already settled must reach the broker first
    dirty_channels_.erase(ch);
    if (failed_.empty()) {
      auto r = session_->cancel(ch, it->second.consumer_tag);
      if (r.ok()) r = session_->close_channel(ch);
      if (r.connection_lost()) failed_ = r.error;
    }
  }
  std::string topic = it->second.topic;
  bool governance = it->second.governance;
  channels_.erase(it);
  dirty_channels_.erase(ch);
  if (governance) {  // its queue is gone with the channel (auto-delete): set up again shortly
    log()->warn("pause consumer lost: {}; consuming pauses again in {} ms", why,
                governance_retry_delay_.count());
    governance_channel_ = 0;
    governance_retry_at_ = clock::now() + governance_retry_delay_;
    return;
  }
  if (why.empty()) return;
  // The consumer died under us: its deliveries are void; consume again shortly.
  log()->warn("consumer of {} lost: {}", topic, why);
  dispatcher_.on_consumer_lost(topic);
  if (auto c = consumers_.find(topic); c != consumers_.end() && c->second.channel == ch) {
    c->second.channel = 0;
    c->second.retry_at = clock::now() + c->second.retry_delay;
  }
}

}  // namespace dde::mqs
