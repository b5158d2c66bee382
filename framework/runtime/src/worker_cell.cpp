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
      for (auto& queued : self->mailbox_)
        owner->worker_failed(self->index_, queued.second, "worker stopped", {});
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
      case directive::stop: self->stop_for_good("stopped by its supervisor"); return;
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

}  // namespace dde::runtime
