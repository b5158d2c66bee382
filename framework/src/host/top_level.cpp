#include "host/top_level.hpp"

#include <limits>
#include <type_traits>

#include <boost/asio/post.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/net/auth.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "dde/protocol/mqs_request.hpp"

namespace dde::host {
namespace {

constexpr std::size_t max_at_most_once_backlog = 100000;
constexpr std::size_t max_queued_bytes = 8 * 1024 * 1024;
constexpr std::chrono::milliseconds max_backoff{5000};
// What the MQS accepts in a `pause` (mqs/PROTOCOL.md).
constexpr std::chrono::milliseconds max_pause{mqs::max_pause_ms};

std::shared_ptr<spdlog::logger> log() { return logger("host.top"); }

}  // namespace

top_level::top_level(boost::asio::io_context& io, top_level_options options)
    : io_(io),
      strand_(boost::asio::make_strand(io)),
      options_(std::move(options)),
      retry_(strand_, std::chrono::milliseconds(100), max_backoff),
      writable_timer_(strand_),
      stop_timer_(strand_) {
  urls_ = net::parse_ws_url_list(options_.mqs_url);
  if (urls_.empty())
    throw std::invalid_argument("bad MQS URL \"" + options_.mqs_url +
                                "\": expected ws://host:port/path or wss://... (or several, comma-separated)");
}

std::string top_level::current_url() const {
  auto& u = urls_[current_];
  return (u.tls ? "wss://" : "ws://") + u.host + ":" + std::to_string(u.port) + u.path;
}

void top_level::start() {
  boost::asio::post(strand_, [self = shared_from_this()] { self->do_connect(); });
}

void top_level::do_connect() {
  if (stopping_ && unconfirmed_.empty()) return;
  auto self = shared_from_this();
  net::ws_connect(
      io_, urls_[current_], self,
      [self](const std::string& why) {
        boost::asio::post(self->strand_, [self, why] { self->schedule_reconnect(why); });
      },
      net::cluster_link_options());
}

void top_level::schedule_reconnect(const std::string& why) {
  if (stopping_ && unconfirmed_.empty()) {
    check_stopping();
    return;
  }
  auto failed = current_url();
  current_ = (current_ + 1) % urls_.size();  // an alternative MQS, if any, takes over
  stats_.link_error = "MQS " + failed + " unreachable: " + why;
  log()->warn("MQS {} unavailable: {}; trying {} in {} ms", failed, why, current_url(), retry_.delay().count());
  // Each alternative is tried once before the delay grows.
  retry_.schedule([self = shared_from_this()] { self->do_connect(); }, current_ == 0);
}

void top_level::on_open(const std::shared_ptr<net::ws_connection>& conn) {
  boost::asio::post(strand_, [self = shared_from_this(), conn] {
    if (self->stopping_ && self->unconfirmed_.empty()) {
      conn->close("isolate system stopping");
      return;
    }
    self->conn_ = conn;
    self->welcomed_ = false;
    if (++self->generation_ > 1) ++self->stats_.reconnects;
    // Whatever was batched for the old connection (acks, pulls) is void with it.
    self->out_.clear();
    self->acks_.clear();
    self->pulls_.clear();
    mqs::append(self->out_, mqs::hello_request{wire::protocol_version, self->options_.system, self->options_.instance});
    for (auto& [seq, u] : self->unconfirmed_) {
      self->append_enqueue(seq, u, delivery_mode::at_least_once);
      ++self->stats_.resent;
    }
    for (auto& m : self->at_most_once_backlog_) self->append_enqueue(0, m, delivery_mode::at_most_once);
    self->at_most_once_backlog_.clear();
    self->pulls_[reply_topic(self->options_.instance)] = {delivery_mode::reply, self->options_.reply_credit};
    for (auto& [topic, sink] : self->routers_)
      if (auto r = sink.lock()) r->on_connected();
    self->schedule_flush();
    self->check_writable();
  });
}

void top_level::on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) {
  if (!binary) {
    log()->warn("MQS sent a text frame: {}", data.substr(0, 200));
    return;
  }
  auto batch = wire::decode_batch(data, std::size_t(1) << 30);
  if (!batch.error.empty()) log()->error("bad batch from the MQS: {}", batch.error);
  boost::asio::post(strand_, [self = shared_from_this(), conn, records = std::move(batch.records)]() mutable {
    if (self->conn_ != conn) return;  // late records of a replaced connection
    for (auto& rec : records) self->handle(rec);
  });
}

void top_level::on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) {
  boost::asio::post(strand_, [self = shared_from_this(), conn, reason] {
    if (self->conn_ != conn) return;
    self->conn_.reset();
    self->welcomed_ = false;
    self->fail_depths("the MQS link dropped before it answered");
    if (self->stopping_) return self->check_stopping();
    self->schedule_reconnect("connection closed (" + reason + ")");
  });
}

void top_level::handle(wire::record& rec) {
  auto parsed = mqs::parse_mqs_record(rec.header);
  if (!parsed) {
    log()->warn("{}", parsed.error());
    return;
  }
  std::visit(
      [&](auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, mqs::deliver_record>)
          handle_deliver(r, std::move(rec.body));
        else
          handle_record(r);
      },
      parsed.value());
}

void top_level::handle_record(const mqs::confirm_record& r) {
  for (auto seq : r.seqs) stats_.confirmed += unconfirmed_.erase(seq);
  check_writable();
  check_stopping();
}

void top_level::handle_record(const mqs::reject_record& r) {
  for (auto seq : r.seqs) stats_.rejected += unconfirmed_.erase(seq);
  log()->error("MQS refused {} message(s): {}", r.seqs.size(), r.error);
  check_writable();
  check_stopping();
}

void top_level::handle_record(const mqs::welcome_record& r) {
  welcomed_ = true;
  stats_.link_error.clear();
  retry_.reset();
  log()->info("connected to MQS {} ({}), generation {}", current_url(), r.mqs, generation_);
}

void top_level::handle_record(const mqs::error_record& r) {
  log()->warn("MQS error: {} (header {})", r.error, r.header.is_null() ? std::string("-") : r.header.dump());
}

void top_level::handle_deliver(mqs::deliver_record& r, std::string body) {
  ++stats_.delivered;
  if (r.topic == reply_topic(options_.instance)) {
    // Replies are acked by the MQS on hand-over; keep the reply queue's credit topped up.
    auto& p = pulls_[r.topic];
    p.mode = delivery_mode::reply;
    p.credit += 1;
    schedule_flush();
    envelope e = join_envelope(r.props, r.topic, std::move(body));
    auto to = parse_address(e.to);
    auto it = to ? routers_.find(to->topic()) : routers_.end();
    auto sink = it == routers_.end() ? nullptr : it->second.lock();
    if (!sink) {
      ++stats_.replies_dropped;
      log()->debug("reply to {} dropped: no such pool here", e.to);
      return;
    }
    sink->deliver_reply(std::move(e));
    return;
  }
  auto it = routers_.find(r.topic);
  auto sink = it == routers_.end() ? nullptr : it->second.lock();
  if (!sink) {
    // The pool is gone: give the message back for another instance.
    mqs::append(out_, mqs::nack_request{{r.tag}, true});
    schedule_flush();
    return;
  }
  sink->deliver(generation_, r.tag, r.redelivered, std::move(r.props), std::move(body));
}

void top_level::handle_record(const mqs::pause_record& r) {
  auto it = pause_handlers_.find(r.topic);
  if (it == pause_handlers_.end()) return;  // no pool of that topic here (any more)
  auto length = std::min<std::uint64_t>(r.ms, max_pause.count());
  it->second(std::chrono::milliseconds(length), r.reason, r.origin);
}

void top_level::append_enqueue(std::uint64_t seq, const unconfirmed& m, delivery_mode mode) {
  mqs::append_enqueue(out_, m.topic, mode, mode == delivery_mode::at_least_once ? std::optional(seq) : std::nullopt,
                      m.props, m.body);
}

void top_level::enqueue(std::string topic, delivery_mode mode, std::string props, std::string body) {
  boost::asio::post(strand_, [self = shared_from_this(),
                              m = unconfirmed{std::move(topic), std::move(props), std::move(body)}, mode]() mutable {
    ++self->stats_.enqueued;
    if (mode == delivery_mode::at_least_once) {
      std::uint64_t seq = self->next_seq_++;
      if (self->conn_) self->append_enqueue(seq, m, mode);
      self->unconfirmed_.emplace(seq, std::move(m));
    } else if (self->conn_) {
      self->append_enqueue(0, m, mode);
    } else {
      if (self->at_most_once_backlog_.size() >= max_at_most_once_backlog) {
        self->at_most_once_backlog_.pop_front();
        ++self->stats_.dropped_at_most_once;
      }
      self->at_most_once_backlog_.push_back(std::move(m));
    }
    self->schedule_flush();
  });
}

void top_level::pull(const std::string& topic, delivery_mode mode, std::size_t credit, std::uint32_t consumers) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, mode, credit, consumers] {
    if (!self->conn_) return;  // on_open asks every router again
    auto& p = self->pulls_[topic];
    p.mode = mode;
    p.credit += credit;
    if (consumers) p.consumers = consumers;
    self->schedule_flush();
  });
}

void top_level::ack(std::uint64_t generation, std::uint64_t tag) {
  boost::asio::post(strand_, [self = shared_from_this(), generation, tag] {
    // A tag of an earlier connection is void: the MQS already gave that message back.
    if (generation != self->generation_ || !self->conn_) return;
    self->acks_.push_back(tag);
    self->schedule_flush();
  });
}

void top_level::nack(std::uint64_t generation, std::uint64_t tag, bool requeue) {
  boost::asio::post(strand_, [self = shared_from_this(), generation, tag, requeue] {
    if (generation != self->generation_ || !self->conn_) return;
    mqs::append(self->out_, mqs::nack_request{{tag}, requeue});
    self->schedule_flush();
  });
}

void top_level::cancel(const std::string& topic) {
  boost::asio::post(strand_, [self = shared_from_this(), topic] {
    self->pulls_.erase(topic);
    if (!self->conn_) return;
    mqs::append(self->out_, mqs::cancel_request{topic});
    self->schedule_flush();
  });
}

void top_level::pause(const std::string& topic, std::chrono::milliseconds ms, const std::string& reason) {
  if (ms.count() <= 0) return;
  boost::asio::post(strand_, [self = shared_from_this(), topic, ms = std::min(ms, max_pause), reason] {
    if (!self->conn_) {
      log()->debug("pause of {} for {} ms dropped: no MQS link", topic, ms.count());
      return;
    }
    // The encoder cuts the reason at a character boundary and replaces invalid UTF-8.
    mqs::append(self->out_, mqs::pause_request{topic, std::uint32_t(ms.count()), reason});
    self->schedule_flush();
  });
}

void top_level::queue_depth(const std::string& topic, depth_handler fn) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, fn = std::move(fn)]() mutable {
    if (!self->conn_ || !self->welcomed_) return fn(0, 0, "no MQS link");
    self->depth_waiting_[topic].push_back(std::move(fn));
    mqs::append(self->out_, mqs::depth_request{topic});
    self->schedule_flush();
  });
}

void top_level::handle_record(const mqs::depth_record& r) {
  auto it = depth_waiting_.find(r.topic);
  if (it == depth_waiting_.end() || it->second.empty()) return;
  auto fn = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) depth_waiting_.erase(it);
  fn(r.messages, r.consumers, r.error);
}

void top_level::fail_depths(const std::string& error) {
  auto waiting = std::move(depth_waiting_);
  depth_waiting_.clear();
  for (auto& [topic, fns] : waiting)
    for (auto& fn : fns) fn(0, 0, error);
}

void top_level::set_pause_handler(const std::string& topic, pause_handler fn) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, fn = std::move(fn)]() mutable {
    if (fn)
      self->pause_handlers_[topic] = std::move(fn);
    else
      self->pause_handlers_.erase(topic);
  });
}

void top_level::attach(const std::string& topic, std::weak_ptr<topic_sink> sink) {
  boost::asio::post(strand_, [self = shared_from_this(), topic, sink = std::move(sink)] { self->routers_[topic] = sink; });
}

void top_level::detach(const std::string& topic) {
  boost::asio::post(strand_, [self = shared_from_this(), topic] {
    self->routers_.erase(topic);
    self->pause_handlers_.erase(topic);
  });
}

void top_level::schedule_flush() {
  if (flush_scheduled_) return;
  flush_scheduled_ = true;
  boost::asio::post(strand_, [self = shared_from_this()] { self->flush(); });
}

void top_level::flush() {
  flush_scheduled_ = false;
  if (!conn_) {
    out_.clear();
    acks_.clear();
    pulls_.clear();
    return;
  }
  if (!acks_.empty()) {
    mqs::append(out_, mqs::ack_request{std::move(acks_)});
    acks_.clear();
  }
  for (auto& [topic, p] : pulls_) {
    auto credit = std::uint32_t(std::min<std::size_t>(p.credit, std::numeric_limits<std::uint32_t>::max()));
    mqs::append(out_, mqs::pull_request{topic, p.mode, credit, p.consumers});  // split above max_credit
  }
  pulls_.clear();
  if (!out_.empty()) conn_->send(std::move(out_), true);
  out_.clear();
}

bool top_level::writable() const {
  if (unconfirmed_.size() >= options_.window) return false;
  if (at_most_once_backlog_.size() >= options_.window) return false;
  if (conn_ && conn_->queued_bytes() >= max_queued_bytes) return false;
  return true;
}

void top_level::when_writable(std::function<void()> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)]() mutable {
    self->waiting_writers_.push_back(std::move(fn));
    self->check_writable();
  });
}

void top_level::check_writable() {
  if (waiting_writers_.empty()) return;
  // Writers wake at half the window, so they refill in batches rather than one by one.
  bool room = unconfirmed_.size() <= options_.window / 2 && at_most_once_backlog_.size() <= options_.window / 2 &&
              (!conn_ || conn_->queued_bytes() < max_queued_bytes / 2);
  if (room) {
    auto writers = std::move(waiting_writers_);
    waiting_writers_.clear();
    for (auto& w : writers) w();
    return;
  }
  // Confirms wake writers held by the window; the socket's send queue has no event, so poll it.
  if (conn_ && conn_->queued_bytes() >= max_queued_bytes / 2 && !writable_timer_armed_) {
    writable_timer_armed_ = true;
    writable_timer_.expires_after(std::chrono::milliseconds(2));
    writable_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->writable_timer_armed_ = false;
      if (!ec) self->check_writable();
    });
  }
}

void top_level::read_stats(std::function<void(const top_level_stats&)> fn) {
  boost::asio::post(strand_, [self = shared_from_this(), fn = std::move(fn)] {
    auto stats = self->stats_;
    stats.linked = self->conn_ && self->welcomed_;
    if (!stats.linked && stats.link_error.empty())
      stats.link_error = "connecting to MQS " + self->current_url();
    fn(stats);
  });
}

void top_level::stop(std::chrono::milliseconds timeout, std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), timeout, done = std::move(done)] {
    self->stopping_ = true;
    self->stopped_ = done;
    self->stop_timer_.expires_after(timeout);
    self->stop_timer_.async_wait([self](boost::system::error_code ec) {
      if (ec || !self->stopped_) return;
      log()->warn("stopping with {} unconfirmed message(s){}", self->unconfirmed_.size(),
                  self->conn_ ? " and a link to the MQS that did not close in time" : "");
      self->unconfirmed_.clear();
      self->conn_.reset();
      self->check_stopping();
    });
    self->check_stopping();
  });
}

void top_level::check_stopping() {
  if (!stopping_ || !stopped_ || !unconfirmed_.empty()) return;
  if (conn_) {
    // The close goes out after everything queued before it (at-most-once messages the MQS has not
    // read yet, under backpressure, say); stopping is done once the link has closed (on_close).
    if (!close_sent_) {
      close_sent_ = true;
      flush();
      conn_->close("isolate system stopping");
    }
    return;
  }
  stop_timer_.cancel();
  if (!at_most_once_backlog_.empty())
    log()->warn("stopping without a link to the MQS: {} at-most-once message(s) dropped",
                at_most_once_backlog_.size());
  retry_.cancel();
  auto fn = std::move(stopped_);
  stopped_ = nullptr;
  fn();
}

}  // namespace dde::host
