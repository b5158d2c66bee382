// The top level as its pools see it (mqs_link): what a router sends, pulls, acks and asks for on the
// MQS link, the outbound window that holds producers back, and the records the MQS sends for a pool
// (deliveries, replies, pauses, queue depths). The link itself (connect, hello, reconnect, flush,
// stop) is in top_level.cpp.
#include <algorithm>
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <limits>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"
#include "top_level.hpp"

namespace dde::host {
namespace {

// Bytes queued on the MQS socket beyond which producers wait (they wake at half).
constexpr std::size_t max_queued_bytes = 8 * 1024 * 1024;
// What the outgoing batch holds goes to the MQS as one WebSocket message, and the MQS closes a link whose
// message is over its --max-frame (16 MiB by default). So its records are sent as soon as they are this
// much, however many enqueues pile up before the next flush: a burst of large messages from a
// producer, or the whole window replayed after a reconnect (4,096 messages of 64 KiB would be
// 256 MiB: closed, replayed again, for ever).
constexpr std::size_t flush_at_bytes = 1024 * 1024;
// What the MQS accepts in a `pause` (mqs/PROTOCOL.md).
constexpr std::chrono::milliseconds max_pause{mqs::max_pause_ms};

std::shared_ptr<spdlog::logger> log() { return logger("host.top"); }

}  // namespace

void top_level::handle_deliver(mqs::deliver_record& r, std::string body) {
  ++stats_.delivered;
  if (r.topic == reply_topic_) {
    // Replies are acked by the MQS on hand-over; keep the reply queue's credit topped up.
    batch_.add_pull(r.topic, delivery_mode::reply, 1);
    schedule_flush();
    envelope e = join_envelope(std::move(r.props), r.topic, std::move(body));
    auto to = parse_address(e.to);
    auto sink = to ? pools_.find(to->topic()) : nullptr;
    if (!sink) {
      ++stats_.replies_dropped;
      log()->debug("reply to {} dropped: no such pool here", e.to);
      return;
    }
    sink->deliver_reply(std::move(e));
    return;
  }
  watching_.pools.delivered(r.topic, inbound_.now);
  auto sink = pools_.find(r.topic);
  if (!sink) {
    // The pool is gone: give the message back for another instance.
    mqs::append(batch_.records(), mqs::nack_request{{r.tag}, true});
    schedule_flush();
    return;
  }
  auto at = std::find_if(inbound_.handing.begin(), inbound_.handing.end(),
                         [&](auto& h) { return h.first == sink; });
  if (at == inbound_.handing.end())
    at = inbound_.handing.emplace(inbound_.handing.end(), std::move(sink),
                                  std::vector<topic_sink::delivery>{});
  at->second.push_back({r.tag, r.redelivered, r.published_us, std::move(r.props), std::move(body)});
}

void top_level::hand_deliveries() {
  for (auto& [sink, batch] : inbound_.handing) sink->deliver(link_.generation, std::move(batch));
  inbound_.handing.clear();
}

void top_level::handle_record(const mqs::pause_record& r) {
  // No pool of that topic here (any more): dropped.
  auto length = std::min<std::uint64_t>(r.ms, max_pause.count());
  pools_.pause(r.topic, std::chrono::milliseconds(length), r.reason, r.origin);
}

void top_level::append_enqueue(std::uint64_t seq, const pending_enqueue& m, delivery_mode mode) {
  auto& out = batch_.records();
  mqs::append_enqueue(out, m.topic, mode,
                      mode == delivery_mode::at_least_once ? std::optional(seq) : std::nullopt, m.props,
                      m.body);
  if (link_.conn && out.size() >= flush_at_bytes) send_out();
}

void top_level::enqueue(std::string topic, delivery_mode mode, std::string props, std::string body) {
  boost::asio::defer(strand_, [self = shared_from_this(),
                               m = pending_enqueue{std::move(topic), std::move(props), std::move(body), {}},
                               mode]() mutable {
    if (mode == delivery_mode::at_least_once) return self->hold_until_confirmed(std::move(m));
    ++self->stats_.enqueued;
    if (self->link_.conn)
      self->append_enqueue(0, m, mode);
    else if (!self->window_.keep(std::move(m)))
      ++self->stats_.dropped_at_most_once;
    self->schedule_flush();
  });
}

void top_level::enqueue_then(std::string topic, std::string props, std::string body,
                             std::function<void(bool)> settled) {
  boost::asio::post(strand_, [self = shared_from_this(),
                              m = pending_enqueue{std::move(topic), std::move(props), std::move(body),
                                                  std::move(settled)}]() mutable {
    self->hold_until_confirmed(std::move(m));
  });
}

void top_level::hold_until_confirmed(pending_enqueue m) {
  ++stats_.enqueued;
  auto [seq, held] = window_.hold(std::move(m));
  if (link_.conn) append_enqueue(seq, held, delivery_mode::at_least_once);
  schedule_flush();
}

void top_level::pull(const std::string& topic, delivery_mode mode, std::size_t credit,
                     std::uint32_t consumers) {
  boost::asio::defer(strand_, [self = shared_from_this(), topic, mode, credit, consumers] {
    if (!self->link_.conn) return;  // on_open asks every router again
    self->batch_.add_pull(topic, mode, credit, consumers);
    self->schedule_flush();
  });
}

void top_level::ack(std::uint64_t generation, std::uint64_t tag) {
  boost::asio::defer(strand_, [self = shared_from_this(), generation, tag] {
    // A tag of an earlier connection is void: the MQS already gave that message back.
    if (generation != self->link_.generation || !self->link_.conn) return;
    self->batch_.ack(tag);
    self->schedule_flush();
  });
}

void top_level::nack(std::uint64_t generation, std::uint64_t tag, bool requeue) {
  boost::asio::defer(strand_, [self = shared_from_this(), generation, tag, requeue] {
    if (generation != self->link_.generation || !self->link_.conn) return;
    mqs::append(self->batch_.records(), mqs::nack_request{{tag}, requeue});
    self->schedule_flush();
  });
}

void top_level::cancel(const std::string& topic) {
  boost::asio::post(strand_, [self = shared_from_this(), topic] {
    self->batch_.drop_pull(topic);
    self->watching_.pools.cancelled(topic);
    if (!self->link_.conn) return;
    mqs::append(self->batch_.records(), mqs::cancel_request{topic});
    self->schedule_flush();
  });
}

void top_level::pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason) {
  if (ms.count() <= 0) return;
  boost::asio::post(strand_, [self = shared_from_this(), topic, ms = std::min(ms, max_pause), reason] {
    if (!self->link_.conn) {
      log()->debug("pause of {} for {} ms dropped: no MQS link", topic, ms.count());
      return;
    }
    // The encoder cuts the reason at a character boundary and replaces invalid UTF-8.
    mqs::append(self->batch_.records(), mqs::pause_request{topic, std::uint32_t(ms.count()), reason});
    self->schedule_flush();
  });
}

void top_level::queue_depth(const std::string& topic, depth_handler fn) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, fn = std::move(fn)]() mutable {
    self->ask_depth(topic, std::move(fn));
  });
}

void top_level::ask_depth(const std::string& topic, depth_handler fn) {
  if (!link_.conn || !link_.welcomed) return fn(0, 0, "no MQS link");
  pools_.asked_depth(topic, std::move(fn));
  mqs::append(batch_.records(), mqs::depth_request{topic});
  schedule_flush();
}

void top_level::handle_record(const mqs::depth_record& r) {
  pools_.answer_depth(r.topic, r.messages, r.consumers, r.error);
}

void top_level::set_pause_handler(const std::string& topic, pause_handler fn) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, fn = std::move(fn)]() mutable {
    self->pools_.set_pause_handler(topic, std::move(fn));
  });
}

void top_level::attach(const std::string& topic, std::weak_ptr<topic_sink> sink) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, sink = std::move(sink)] {
    self->pools_.attach(topic, sink);
  });
}

void top_level::detach(const std::string& topic) {
  boost::asio::post(strand_, [self = shared_from_this(), topic] {
    self->pools_.detach(topic);
    self->batch_.partition(topic, 0, {});
  });
}

void top_level::partition(const std::string& topic, std::uint32_t count, const std::string& key) {
  boost::asio::post(
      strand_, [self = shared_from_this(), topic, count, key] { self->batch_.partition(topic, count, key); });
}

bool top_level::writable() const {
  if (window_.unconfirmed() >= options_.window) return false;
  if (window_.backlog() >= options_.window) return false;
  if (link_.conn && link_.conn->queued_bytes() >= max_queued_bytes) return false;
  return true;
}

void top_level::when_writable(std::function<void()> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)]() mutable {
    self->writers_.waiting.push_back(std::move(fn));
    self->check_writable();
  });
}

void top_level::check_writable() {
  if (writers_.waiting.empty()) return;
  // Writers wake at half the window, so they refill in batches rather than one by one.
  bool room = window_.unconfirmed() <= options_.window / 2 && window_.backlog() <= options_.window / 2 &&
              (!link_.conn || link_.conn->queued_bytes() < max_queued_bytes / 2);
  if (room) {
    auto writers = std::move(writers_.waiting);
    writers_.waiting.clear();
    for (auto& w : writers) w();
    return;
  }
  // Confirms wake writers held by the window; the socket's send queue has no event, so poll it.
  if (link_.conn && link_.conn->queued_bytes() >= max_queued_bytes / 2 && !writers_.armed) {
    writers_.armed = true;
    writers_.timer.expires_after(std::chrono::milliseconds(2));
    writers_.timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->writers_.armed = false;
      if (!ec) self->check_writable();
    });
  }
}

}  // namespace dde::host
