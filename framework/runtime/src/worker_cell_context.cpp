// The context a worker calls (dde::worker_context): its args, what it sends, asks, replies and
// forwards, its timers and its log. The cell's life cycle and supervision are in worker_cell.cpp.
#include <boost/asio/defer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/names.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::runtime {

const nlohmann::json& worker_cell::args() const { return spec_->args; }

envelope worker_cell::make_envelope(std::string_view to) {
  envelope e;
  e.id = new_uuid();
  e.from = self_;
  e.to.assign(to);
  e.traceparent = hop_.outgoing(self_, e.id);
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
  if (!target)
    throw std::invalid_argument("send: \"" + std::string(to) + "\" is not an address system/isolate");
  if (!reply_to.empty() && !parse_address(reply_to))
    throw std::invalid_argument("send: replyTo \"" + std::string(reply_to) +
                                "\" is not an address system/isolate");
  envelope e = make_envelope(to);
  e.reply_to.assign(reply_to);
  e.body = std::move(body);
  e.bytes = std::move(bytes);
  e.is_bytes = is_bytes;
  publish(target->topic(), spec_->mode, std::move(e));
}

void worker_cell::send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) {
  auto target = parse_address(to);
  if (!target)
    throw std::invalid_argument("send_after: \"" + std::string(to) + "\" is not an address system/isolate");
  if (delay.count() < 1 || delay.count() > 86400000)
    throw std::invalid_argument("send_after: the delay must be from 1 ms to 24 h, not " +
                                std::to_string(delay.count()) + " ms");
  envelope e = make_envelope(to);
  e.body = std::move(body);
  // The delay queue of the target dead-letters it back to the target's queue when the delay passed.
  publish(delay_topic(target->topic(), delay.count()), delivery_mode::at_least_once, std::move(e));
}

void worker_cell::ask(nlohmann::json body, std::string_view to) {
  auto target = parse_address(to);
  if (!target)
    throw std::invalid_argument("ask: \"" + std::string(to) + "\" is not an address system/isolate");
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
  if (!target)
    throw std::invalid_argument("forward: \"" + std::string(to) + "\" is not an address system/isolate");
  envelope e = to_envelope(m);
  e.to.assign(to);
  if (e.id.empty()) e.id = new_uuid();  // a plain AMQP payload has none
  // Forwarded while handling it (or anything else): the next hop of this worker's trace. Forwarded
  // later: it keeps its own.
  if (hop_.active() || e.traceparent.empty()) e.traceparent = hop_.outgoing(self_, e.id);
  // A forwarded answer is a plain message for the target, not an answer to one of its asks.
  e.in_reply_to.clear();
  e.to_worker.clear();
  publish(target->topic(), spec_->mode, std::move(e));
}

void worker_cell::end_delivery(std::string_view error) {
  handling_.busy = false;
  hop_.end(self_, "receive", error);
  if (gating_.gate) gating_.gate->finished();
}

void worker_cell::done() {
  if (!handling_.busy) return;  // done() outside a delivery (e.g. twice) changes nothing
  end_delivery();
  if (auto r = owner_.lock()) r->worker_done(index_, handling_.delivery);
  // The next message starts on a later turn (not down this stack: a worker calling done() from
  // on_message would recurse). With the mailbox empty there is none: the next one handed over
  // starts at once (post_message).
  if (!mailbox_.empty()) boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::backoff(std::chrono::milliseconds delay, std::string_view reason) {
  if (!handling_.busy) return;  // like done(): only the message being handled can be backed off
  // The pool's gate pauses at once, so no sibling starts a message while the router hears of it.
  if (gating_.gate && delay.count() > 0)
    gating_.gate->pause_until(rate_gate::clock::now() + std::min(delay, spec_->backoff.max_delay));
  end_delivery(reason.empty() ? std::string_view("rate limited") : reason);
  if (auto r = owner_.lock())
    r->worker_rate_limited(index_, handling_.delivery, delay, std::string(reason),
                           worker_access::current(*instance_.worker));
  boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::when_writable(std::function<void()> fn) {
  auto owner = owner_.lock();
  if (!owner) return;
  owner->when_writable([self = shared_from_this(), epoch = instance_.epoch, fn = std::move(fn)]() mutable {
    boost::asio::post(self->strand_, [self, epoch, fn = std::move(fn)]() mutable {
      self->run_callback(epoch, std::move(fn), "a when_writable callback threw: ");
    });
  });
}

void worker_cell::run_callback(std::uint64_t epoch, std::function<void()> fn, const char* threw) {
  // A callback of an instance that was since restarted must not run on its successor.
  if (instance_.dead || !instance_.worker || epoch != instance_.epoch) return;
  // Nor does one run while its crashed instance waits for its supervisor: it runs if the instance
  // resumes, and is dropped with it if it is restarted or stopped.
  if (instance_.suspended) return instance_.held.push_back({std::move(fn), threw});
  try {
    fn();
  } catch (const std::exception& e) {
    crashed(threw + std::string(e.what()));
  }
}

void worker_cell::after(std::chrono::milliseconds delay, std::function<void()> fn) {
  auto timer = std::make_shared<boost::asio::steady_timer>(strand_, delay);
  timer->async_wait([self = shared_from_this(), timer, epoch = instance_.epoch,
                     fn = std::move(fn)](boost::system::error_code ec) mutable {
    if (!ec) self->run_callback(epoch, std::move(fn), "a timer callback threw: ");
  });
}

void worker_cell::log(int level, std::string_view text) {
  logger("worker." + spec_->isolate)
      ->log(static_cast<spdlog::level::level_enum>(std::clamp(level, 0, 5)), "{}", text);
}

}  // namespace dde::runtime
