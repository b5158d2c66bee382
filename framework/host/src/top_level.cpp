// The isolate system's link to its MQS: connects (trying each MQS URL in turn, with backoff),
// says hello, sends again what the MQS had not confirmed after a reconnect, batches what goes out
// (flush), dispatches the records that come in, and stops once everything is confirmed. What the
// pools ask of the link is in top_level_pools.cpp.
#include "top_level.hpp"

#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <type_traits>

#include "dde/core/net/url.hpp"
#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"

namespace dde::host {
namespace {

std::shared_ptr<spdlog::logger> log() { return logger("host.top"); }

}  // namespace

top_level::top_level(boost::asio::io_context& io, top_level_options options)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      options_(std::move(options)),
      reply_topic_(reply_topic(options_.instance)),
      link_waiters_(strand_) {
  link_.urls = net::parse_ws_url_list(options_.mqs_url);
  if (link_.urls.empty())
    throw std::invalid_argument(
        "bad MQS URL \"" + options_.mqs_url +
        "\": expected ws://host:port/path or wss://... (or several, comma-separated)");
}

std::string top_level::current_url() const { return net::url_text(link_.urls[link_.current]); }

void top_level::start() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    self->do_connect();
    if (self->watching_.pools.enabled()) self->schedule_watch();
  });
}

void top_level::schedule_watch() {
  watching_.timer.expires_after(std::chrono::seconds(1));
  watching_.timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->stop_.requested) return;
    self->watch();
    self->schedule_watch();
  });
}

void top_level::watch() {
  if (!link_.conn || !link_.welcomed) return;
  auto now = std::chrono::steady_clock::now();
  auto found = watching_.pools.sweep(now);
  if (!found.stalled.empty())  // one new link serves every pool
    return stalled(found.stalled.front(), "the MQS left a depth question unanswered for " +
                                              std::to_string(options_.stall_timeout.count()) + " ms");
  for (auto& topic : found.ask)
    ask_depth(
        topic, [self = shared_from_this(), topic](std::uint64_t ready, std::uint64_t, std::string error) {
          if (!self->watching_.pools.answer(topic, ready, !error.empty(), std::chrono::steady_clock::now()))
            return;
          self->stalled(topic, std::to_string(ready) + " message(s) ready in its queue");
        });
}

void top_level::stalled(const std::string& topic, const std::string& evidence) {
  log()->warn(
      "pool {} stalled: credit for {} out at MQS {} and no delivery for {} ms while {}; moving to a "
      "fresh link",
      topic, watching_.pools.credit(topic), current_url(), options_.stall_timeout.count(), evidence);
  abandon_link("pool " + topic + " stalled");
}

void top_level::abandon_link(const std::string& why) {
  auto old = link_.conn;
  link_lost(why);
  if (old) old->close(why);  // its on_close is ignored: it is no longer link_.conn
}

void top_level::link_lost(const std::string& why) {
  link_.conn.reset();
  link_.welcomed = false;
  pools_.fail_depths("the MQS link dropped before it answered");
  if (stop_.requested) return check_stopping();
  schedule_reconnect(why);
}

void top_level::do_connect() {
  if (stop_.requested && window_.unconfirmed() == 0) return;
  auto self = shared_from_this();
  auto on_fail = [self](const std::string& why) {
    boost::asio::post(self->strand_, [self, why] { self->schedule_reconnect(why); });
  };
  if (options_.connect)
    options_.connect(link_.urls[link_.current], self, std::move(on_fail));
  else
    net::ws_connect(io_, link_.urls[link_.current], self, std::move(on_fail), net::cluster_link_options());
}

void top_level::schedule_reconnect(const std::string& why) {
  if (stop_.requested && window_.unconfirmed() == 0) {
    check_stopping();
    return;
  }
  auto failed = current_url();
  link_.current = (link_.current + 1) % link_.urls.size();  // an alternative MQS, if any, takes over
  stats_.link_error = "MQS " + failed + " unreachable: " + why;
  // Each alternative is tried once before the delay grows.
  auto delay = link_.retry.schedule([self = shared_from_this()] { self->do_connect(); }, link_.current == 0);
  log()->warn("MQS {} unavailable: {}; trying {} in {} ms", failed, why, current_url(), delay.count());
}

void top_level::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stop_.requested && self->window_.unconfirmed() == 0) {
      conn->close("isolate system stopping");
      return;
    }
    self->link_.conn = conn;
    self->link_.welcomed = false;
    self->watching_.pools.linked(std::chrono::steady_clock::now());
    if (++self->link_.generation > 1) ++self->stats_.reconnects;
    // Whatever was batched for the old connection (acks, pulls) is void with it.
    self->batch_.clear();
    mqs::append(self->batch_.records(), mqs::hello_request{wire::protocol_version, self->options_.system,
                                                           self->options_.instance, true});
    self->window_.for_each_unconfirmed([&](std::uint64_t seq, const pending_enqueue& m) {
      self->append_enqueue(seq, m, delivery_mode::at_least_once);
      ++self->stats_.resent;
    });
    for (auto& m : self->window_.take_backlog()) self->append_enqueue(0, m, delivery_mode::at_most_once);
    self->batch_.add_pull(self->reply_topic_, delivery_mode::reply, self->options_.reply_credit);
    self->pools_.connected();
    self->schedule_flush();
    self->check_writable();
  });
}

void top_level::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) {
  if (!binary) {
    log()->warn("MQS sent a text frame: {}", data.substr(0, 200));
    return;
  }
  auto batch = wire::split_batch(data, std::size_t(1) << 30);
  if (!batch.error.empty()) log()->error("bad batch from the MQS: {}", batch.error);
  std::vector<incoming> records;
  records.reserve(batch.records.size());
  for (auto& f : batch.records) {
    // A deliver header (one a message) is read without a JSON tree; others as JSON.
    auto parsed = mqs::read_mqs_record(f.header);
    if (!parsed) {
      log()->warn("{}", parsed.error());
      continue;
    }
    records.push_back({std::move(parsed).value(), std::string(f.body)});
  }
  // A message's hops through the host (this strand, its router's, its worker cell's, back, the
  // ack, the flush and the WebSocket write) are deferred, not posted: Asio runs a deferred handler
  // on the thread that ran the current one, after it, instead of handing it to an idle thread (it
  // still wakes one when more than one handler waits, so workers run in parallel when messages
  // queue). A message then goes through the host in one go, and acks and credit leave in the same
  // turn as the batch that came in. bench/profile/ab.sh, a build that defers against one that
  // posts (4 rounds, at-most-once, 1 consumer, prefetch 64): 29,700-34,600 msg/s deferred against
  // 23,700-28,600 posted, with less CPU in the host, the MQS and the broker alike.
  boost::asio::defer(strand_, [self = shared_from_this(), conn, records = std::move(records)]() mutable {
    if (self->link_.conn != conn) return;  // late records of a replaced connection
    if (self->watching_.pools.enabled()) self->inbound_.now = std::chrono::steady_clock::now();
    for (auto& rec : records) self->handle(rec);
    self->hand_deliveries();
  });
}

void top_level::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    if (self->link_.conn != conn) return;
    self->link_lost("connection closed (" + reason + ")");
  });
}

void top_level::handle(incoming& in) {
  std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, mqs::deliver_record>)
          handle_deliver(r, std::move(in.body));
        else
          handle_record(r);
      },
      in.record);
}

void top_level::handle_record(const mqs::confirm_record& r) {
  for (auto seq : r.seqs)
    if (window_.settle(seq, true)) ++stats_.confirmed;
  check_writable();
  check_stopping();
}

void top_level::handle_record(const mqs::reject_record& r) {
  for (auto seq : r.seqs)
    if (window_.settle(seq, false)) ++stats_.rejected;
  log()->error("MQS refused {} message(s): {}", r.seqs.size(), r.error);
  check_writable();
  check_stopping();
}

void top_level::handle_record(const mqs::welcome_record& r) {
  link_.welcomed = true;
  stats_.link_error.clear();
  link_.retry.reset();
  log()->info("connected to MQS {} ({}), generation {}", current_url(), r.mqs, link_.generation);
  link_waiters_.answer({});
}

void top_level::when_linked(std::chrono::milliseconds timeout, std::function<void(std::string)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, fn = std::move(fn)]() mutable {
    if (self->link_.conn && self->link_.welcomed) return fn({});
    if (self->stop_.requested) return fn("the isolate system is stopping");
    self->link_waiters_.wait(timeout, std::move(fn), [self, timeout] {
      return "no link to the MQS within " + std::to_string(timeout.count()) + " ms (" + self->link_error() +
             ")";
    });
  });
}

std::string top_level::link_error() const {
  if (link_.conn && link_.welcomed) return {};
  return stats_.link_error.empty() ? "connecting to MQS " + current_url() : stats_.link_error;
}

void top_level::handle_record(const mqs::error_record& r) {
  log()->warn("MQS error: {} (header {})", r.error, r.header.is_null() ? std::string("-") : r.header.dump());
}

void top_level::schedule_flush() {
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  // In two passes: the flush goes behind what the handlers queued ahead of it queue in turn. A
  // worker's reply reaches this strand before its router's ack or credit does; flushed in one pass,
  // the reply and the ack left in two WebSocket messages (two sendmsg, two reads and turns of the
  // MQS a request).
  boost::asio::defer(
      strand_, [self = shared_from_this()] { boost::asio::defer(self->strand_, [self] { self->flush(); }); });
}

void top_level::flush() {
  flush_scheduled_ = false;
  if (!link_.conn) return batch_.clear();
  auto now = std::chrono::steady_clock::now();
  auto bytes = batch_.take([&](const std::string& topic, std::size_t credit) {
    if (topic != reply_topic_) watching_.pools.pulled(topic, credit, now);
  });
  if (!bytes.empty()) link_.conn->send(std::move(bytes), true);
}

void top_level::send_out() {
  auto& out = batch_.records();
  if (!out.empty()) link_.conn->send(std::move(out), true);
  out.clear();
}

void top_level::read_stats(std::function<void(const top_level_stats&)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] {
    auto stats = self->stats_;
    stats.linked = self->link_.conn && self->link_.welcomed;
    stats.link_error = self->link_error();
    stats.stalled = self->watching_.pools.report(std::chrono::steady_clock::now());
    stats.stalls = self->watching_.pools.stalls();
    fn(stats);
  });
}

void top_level::stop(std::chrono::milliseconds timeout, std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, done = std::move(done)] {
    self->stop_.requested = true;
    self->stop_.done = done;
    self->watching_.timer.cancel();
    self->link_waiters_.answer("the isolate system is stopping");
    self->stop_.timer.expires_after(timeout);
    self->stop_.timer.async_wait([self](boost::system::error_code ec) {
      if (ec || !self->stop_.done) return;
      log()->warn("stopping with {} unconfirmed message(s){}", self->window_.unconfirmed(),
                  self->link_.conn ? " and a link to the MQS that did not close in time" : "");
      self->window_.give_up();
      self->link_.conn.reset();
      self->check_stopping();
    });
    self->check_stopping();
  });
}

void top_level::check_stopping() {
  if (!stop_.requested || !stop_.done || window_.unconfirmed() > 0) return;
  if (link_.conn) {
    // The close goes out after everything queued before it (at-most-once messages the MQS has not
    // read yet, under backpressure, say); stopping is done once the link has closed (on_close).
    if (!stop_.close_sent) {
      stop_.close_sent = true;
      flush();
      link_.conn->close("isolate system stopping");
    }
    return;
  }
  stop_.timer.cancel();
  if (window_.backlog() > 0)
    log()->warn("stopping without a link to the MQS: {} at-most-once message(s) dropped", window_.backlog());
  link_.retry.cancel();
  auto fn = std::move(stop_.done);
  stop_.done = nullptr;
  fn();
}

}  // namespace dde::host
