#include "dde/runtime/worker_cell.hpp"

#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/names.hpp"

namespace dde::runtime {

worker_cell::worker_cell(boost::asio::io_context& io, std::weak_ptr<cell_owner> owner,
                         std::shared_ptr<const pool_spec> spec, std::shared_ptr<worker_plugin> plugin,
                         std::size_t index)
    : strand_(boost::asio::make_strand(io)),
      owner_(std::move(owner)),
      spec_(std::move(spec)),
      plugin_(std::move(plugin)),
      index_(index),
      self_(spec_->addr().str()),
      id_(new_uuid()) {}

result<bool> worker_cell::create() {
  auto made = plugin_->create(this);
  if (!made) return result<bool>::failure_of(made);
  worker_ = std::move(made.value());
  ++epoch_;
  return true;
}

void worker_cell::start() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    if (!self->worker_) return;
    try {
      self->worker_->on_start();
    } catch (const std::exception& e) {
      self->crashed(std::string("on_start threw: ") + e.what());
    } catch (...) {
      self->crashed("on_start threw a non-standard exception");
    }
  });
}

void worker_cell::post_message(message&& msg, std::uint64_t delivery_id) {
  // defer: a hop of a message through the host (top_level.cpp, top_level::on_message). The message
  // rides the hop behind a pointer: Asio moves a handler into its operation and out again to run
  // it, so a message captured by value was moved three times on the way (about 345 instructions
  // each, callgrind), where the pointer costs one move and an allocation.
  auto m = std::make_unique<message>(std::move(msg));
  boost::asio::defer(strand_, [self = shared_from_this(), m = std::move(m), delivery_id]() mutable {
    self->take(std::move(*m), delivery_id);
  });
}

void worker_cell::post_messages(std::vector<posting> batch) {
  boost::asio::defer(strand_, [self = shared_from_this(), batch = std::move(batch)]() mutable {
    for (auto& [m, delivery_id] : batch) self->take(std::move(m), delivery_id);
  });
}

void worker_cell::take(message&& m, std::uint64_t delivery_id) {
  if (dead_) {
    // Handed over while this instance was being stopped: give it back rather than hold it forever.
    if (auto owner = owner_.lock()) owner->worker_failed(index_, delivery_id, "worker stopped", {});
    return;
  }
  // Straight to the worker when nothing waits before it and it may start now (the mailbox is for
  // the messages that have to wait).
  if (mailbox_.empty() && may_start()) return begin(std::move(m), delivery_id);
  mailbox_.emplace_back(std::move(m), delivery_id);
  run_next();
}

void worker_cell::post_reply(message m) {
  boost::asio::defer(strand_, [self = shared_from_this(), m = std::move(m)]() mutable {
    if (self->dead_ || !self->worker_) return;
    self->invoke(std::move(m), false);
  });
}

void worker_cell::kill(std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    self->dead_ = true;
    if (self->worker_) {
      try {
        self->worker_->before_kill();
      } catch (const std::exception& e) {
        logger("host.worker")->warn("{} before_kill threw: {}", self->self_, e.what());
      } catch (...) {
        logger("host.worker")->warn("{} before_kill threw", self->self_);
      }
      self->worker_.reset();
    }
    self->held_callbacks_.clear();
    // Messages it never finished go back to the owner as failed (at-least-once: to the broker).
    if (auto owner = self->owner_.lock()) {
      if (self->busy_) owner->worker_failed(self->index_, self->current_delivery_, "worker stopped", {});
      for (auto& queued : self->mailbox_) owner->worker_failed(self->index_, queued.second, "worker stopped", {});
    }
    if (self->busy_) self->end_delivery("worker stopped");
    self->mailbox_.clear();
    done();
  });
}

void worker_cell::run_next() {
  if (mailbox_.empty() || !may_start()) return;
  auto [m, id] = std::move(mailbox_.front());
  mailbox_.pop_front();
  begin(std::move(m), id);
}

bool worker_cell::may_start() {
  if (busy_ || dead_ || suspended_ || !worker_ || gate_wait_) return false;
  if (gate_) {
    if (!gate_wake_)
      gate_wake_ = [weak = weak_from_this()] {
        if (auto self = weak.lock())
          boost::asio::post(self->strand_, [self] {
            self->gate_wait_ = false;
            self->run_next();
          });
      };
    auto verdict = gate_->try_start(rate_gate::clock::now(), gate_wake_);
    if (!verdict.allowed) {
      gate_wait_ = true;
      if (verdict.retry_at) {
        // Only while a message waits: an idle pool runs no timer.
        auto timer = std::make_shared<boost::asio::steady_timer>(strand_, *verdict.retry_at);
        timer->async_wait([timer, wake = gate_wake_](boost::system::error_code ec) {
          if (!ec) wake();
        });
      }
      return false;
    }
  }
  return true;
}

void worker_cell::begin(message&& m, std::uint64_t id) {
  busy_ = true;
  busy_since_ = std::chrono::steady_clock::now();
  current_delivery_ = id;
  hop_ = begin_hop(m);
  invoke(std::move(m), true);
}

void worker_cell::invoke(message&& m, bool is_delivery) {
  // A reply is handled in the middle of a delivery: keep that delivery's message as "current".
  message previous;
  hop previous_hop;
  if (!is_delivery) {
    previous = worker_access::take_current(*worker_);
    // An answer is a hop of its own (its span ends when on_receive returns); the delivery's resumes.
    previous_hop = std::exchange(hop_, begin_hop(m));
  }
  // The message is the worker's "current" (what reply() and done() read), moved rather than copied:
  // nothing sets it again while on_receive runs (a reply comes through the strand, later).
  worker_access::set_current(*worker_, std::move(m));
  std::string error;
  try {
    worker_->on_receive(worker_access::current(*worker_));
  } catch (const rate_limited& e) {
    if (!is_delivery) {
      end_hop(hop_, "reply", e.what());
      hop_ = std::move(previous_hop);
      // What backs off is the delivery held (backoff() hands "current" to the owner to try again),
      // never the reply.
      if (worker_) worker_access::set_current(*worker_, std::move(previous));
    }
    if (is_delivery || busy_) backoff(e.delay(), e.what());
    return;
  } catch (const std::exception& e) {
    error = std::string("on_receive threw: ") + e.what();
  } catch (...) {
    error = "on_receive threw a non-standard exception";
  }
  if (!is_delivery) {
    end_hop(hop_, "reply", error);
    hop_ = std::move(previous_hop);
  }
  if (!error.empty()) return crashed(error);
  if (!is_delivery && worker_) worker_access::set_current(*worker_, std::move(previous));
}

void worker_cell::crashed(const std::string& what) {
  if (suspended_ || dead_) return;
  logger("host.worker")->error("{} worker {}: {}", self_, id_, what);
  std::uint64_t failed = busy_ ? current_delivery_ : 0;
  if (busy_) end_delivery(what);
  suspended_ = true;  // nothing runs until the owner decides
  if (auto owner = owner_.lock()) owner->worker_crashed(index_, failed, what);
}

void worker_cell::supervise(directive d, std::chrono::milliseconds delay) {
  boost::asio::post(strand_, [self = shared_from_this(), d, delay] {
    if (self->dead_) return;
    switch (d) {
      case directive::resume: {
        self->suspended_ = false;
        // What came due while it waited runs now, in order (if one crashes it again, the rest wait
        // for the next directive, held again by run_callback).
        auto held = std::move(self->held_callbacks_);
        self->held_callbacks_.clear();
        for (auto& h : held) self->run_callback(self->epoch_, std::move(h.fn), h.threw);
        self->run_next();
        return;
      }
      case directive::stop:
        self->stop_for_good("stopped by its supervisor");
        return;
      case directive::restart:
        if (delay.count() <= 0) return self->replace_instance();
        auto timer = std::make_shared<boost::asio::steady_timer>(self->strand_, delay);
        timer->async_wait([self, timer](boost::system::error_code ec) {
          if (!ec) self->replace_instance();
        });
        return;
    }
  });
}

void worker_cell::ping(std::function<void(bool, std::chrono::milliseconds)> pong) {
  boost::asio::post(strand_, [self = shared_from_this(), pong = std::move(pong)] {
    auto busy_for = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                          self->busy_since_);
    pong(self->busy_, self->busy_ ? busy_for : std::chrono::milliseconds(0));
  });
}

void worker_cell::fail_current(std::string what) {
  boost::asio::post(strand_, [self = shared_from_this(), what = std::move(what)] {
    if (self->busy_) self->crashed(what);
  });
}

void worker_cell::replace_instance() {
  if (dead_) return;
  try {
    if (worker_) worker_->before_kill();
  } catch (...) {
    // The instance being replaced already failed; its before_kill may fail too.
  }
  worker_.reset();
  held_callbacks_.clear();
  id_ = new_uuid();
  auto made = create();
  if (!made) return stop_for_good("cannot restart the worker: " + made.error());
  suspended_ = false;
  logger("host.worker")->info("{}: worker restarted as {}", self_, id_);
  if (auto owner = owner_.lock()) owner->worker_up(index_, id_);
  start();
  boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::stop_for_good(const std::string& why) {
  dead_ = true;
  suspended_ = false;
  held_callbacks_.clear();
  try {
    if (worker_) worker_->before_kill();
  } catch (...) {
  }
  worker_.reset();
  if (auto owner = owner_.lock()) {
    // The slot goes down; what waited in its mailbox goes back to the broker.
    for (auto& queued : mailbox_) owner->worker_failed(index_, queued.second, why, {});
    owner->worker_failed(index_, 0, why, {});
  }
  mailbox_.clear();
}

const nlohmann::json& worker_cell::args() const { return spec_->args; }

envelope worker_cell::make_envelope(std::string_view to) {
  envelope e;
  e.id = new_uuid();
  e.from = self_;
  e.to.assign(to);
  e.traceparent = outgoing_traceparent(e.id);
  return e;
}

void worker_cell::publish(std::string topic, delivery_mode mode, envelope e) {
  auto owner = owner_.lock();
  if (!owner) throw std::runtime_error("the worker's pool is gone");
  owner->enqueue(std::move(topic), mode, e);
}

void worker_cell::send(nlohmann::json body, std::string bytes, bool is_bytes, std::string_view to,
                       std::string_view reply_to) {
  auto target = parse_address(to);
  if (!target) throw std::invalid_argument("send: \"" + std::string(to) + "\" is not an address system/isolate");
  if (!reply_to.empty() && !parse_address(reply_to))
    throw std::invalid_argument("send: replyTo \"" + std::string(reply_to) + "\" is not an address system/isolate");
  envelope e = make_envelope(to);
  e.reply_to.assign(reply_to);
  e.body = std::move(body);
  e.bytes = std::move(bytes);
  e.is_bytes = is_bytes;
  publish(target->topic(), spec_->mode, std::move(e));
}

void worker_cell::send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) {
  auto target = parse_address(to);
  if (!target) throw std::invalid_argument("send_after: \"" + std::string(to) + "\" is not an address system/isolate");
  if (delay.count() < 1 || delay.count() > 86400000)
    throw std::invalid_argument("send_after: the delay must be from 1 ms to 24 h, not " + std::to_string(delay.count()) +
                                " ms");
  envelope e = make_envelope(to);
  e.body = std::move(body);
  // The delay queue of the target dead-letters it back to the target's queue when the delay passed.
  publish(delay_topic(target->topic(), delay.count()), delivery_mode::at_least_once, std::move(e));
}

void worker_cell::ask(nlohmann::json body, std::string_view to) {
  auto target = parse_address(to);
  if (!target) throw std::invalid_argument("ask: \"" + std::string(to) + "\" is not an address system/isolate");
  envelope e = make_envelope(to);
  auto owner = owner_.lock();
  if (!owner) throw std::runtime_error("the worker's pool is gone");
  e.ask_instance = owner->instance();
  e.ask_worker = id_;
  e.body = std::move(body);
  publish(target->topic(), spec_->mode, std::move(e));
}

void worker_cell::reply(const message& to_message, nlohmann::json body) {
  // In a scatter-gather or tail-chopping pool, only the first reply to a message goes out.
  if (auto owner = owner_.lock(); owner && !owner->claim_reply(to_message.id())) return;
  if (!to_message.reply_to().empty()) return send(std::move(body), {}, false, to_message.reply_to(), {});
  if (to_message.is_ask()) {
    envelope e = make_envelope(to_message.sender());
    e.in_reply_to = to_message.id();
    e.to_worker = to_message.ask_worker_;
    e.body = std::move(body);
    if (!valid_name(to_message.ask_instance_))
      throw std::invalid_argument("reply: the asking instance id is not valid");
    publish(reply_topic(to_message.ask_instance_), delivery_mode::reply, std::move(e));
    return;
  }
  if (!parse_address(to_message.sender()))
    throw std::invalid_argument("reply: the message has no sender address to answer (sender \"" +
                                to_message.sender() + "\")");
  send(std::move(body), {}, false, to_message.sender(), {});
}

void worker_cell::forward(const message& m, std::string_view to) {
  auto target = parse_address(to);
  if (!target) throw std::invalid_argument("forward: \"" + std::string(to) + "\" is not an address system/isolate");
  envelope e = to_envelope(m);
  e.to.assign(to);
  if (e.id.empty()) e.id = new_uuid();  // a plain AMQP payload has none
  // Forwarded while handling it (or anything else): the next hop of this worker's trace. Forwarded
  // later: it keeps its own.
  if (hop_.active || e.traceparent.empty()) e.traceparent = outgoing_traceparent(e.id);
  // A forwarded answer is a plain message for the target, not an answer to one of its asks.
  e.in_reply_to.clear();
  e.to_worker.clear();
  publish(target->topic(), spec_->mode, std::move(e));
}

void worker_cell::end_delivery(std::string_view error) {
  busy_ = false;
  end_hop(hop_, "receive", error);
  if (gate_) gate_->finished();
}

void worker_cell::done() {
  if (!busy_) return;  // done() outside a delivery (e.g. twice) changes nothing
  end_delivery();
  if (auto r = owner_.lock()) r->worker_done(index_, current_delivery_);
  // The next message starts on a later turn (not down this stack: a worker calling done() from
  // on_message would recurse). With the mailbox empty there is none: the next one handed over
  // starts at once (post_message).
  if (!mailbox_.empty()) boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::backoff(std::chrono::milliseconds delay, std::string_view reason) {
  if (!busy_) return;  // like done(): only the message being handled can be backed off
  // The pool's gate pauses at once, so no sibling starts a message while the router hears of it.
  if (gate_ && delay.count() > 0)
    gate_->pause_until(rate_gate::clock::now() + std::min(delay, spec_->backoff.max_delay));
  end_delivery(reason.empty() ? std::string_view("rate limited") : reason);
  if (auto r = owner_.lock())
    r->worker_rate_limited(index_, current_delivery_, delay, std::string(reason), worker_access::current(*worker_));
  boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::when_writable(std::function<void()> fn) {
  auto owner = owner_.lock();
  if (!owner) return;
  owner->when_writable([self = shared_from_this(), epoch = epoch_, fn = std::move(fn)]() mutable {
    boost::asio::post(self->strand_, [self, epoch, fn = std::move(fn)]() mutable {
      self->run_callback(epoch, std::move(fn), "a when_writable callback threw: ");
    });
  });
}

void worker_cell::run_callback(std::uint64_t epoch, std::function<void()> fn, const char* threw) {
  // A callback of an instance that was since restarted must not run on its successor.
  if (dead_ || !worker_ || epoch != epoch_) return;
  // Nor does one run while its crashed instance waits for its supervisor: it runs if the instance
  // resumes, and is dropped with it if it is restarted or stopped.
  if (suspended_) return held_callbacks_.push_back({std::move(fn), threw});
  try {
    fn();
  } catch (const std::exception& e) {
    crashed(threw + std::string(e.what()));
  }
}

void worker_cell::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, delay);
  timer->async_wait([self = shared_from_this(), timer, epoch = epoch_, fn = std::move(fn)](
                        boost::system::error_code ec) mutable {
    if (!ec) self->run_callback(epoch, std::move(fn), "a timer callback threw: ");
  });
}

void worker_cell::log(int level, std::string_view text) {
  logger("worker." + spec_->isolate)->log(static_cast<spdlog::level::level_enum>(std::clamp(level, 0, 5)), "{}", text);
}

}  // namespace dde::runtime
