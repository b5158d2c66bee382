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
  instance_.worker = std::move(made.value());
  ++instance_.epoch;
  return true;
}

void worker_cell::start() {
  boost::asio::post(strand_, [self = shared_from_this()] {
    if (!self->instance_.worker) return;
    try {
      self->instance_.worker->on_start();
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
  if (instance_.dead) {
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
    if (self->instance_.dead || !self->instance_.worker) return;
    self->invoke(std::move(m), false);
  });
}

void worker_cell::kill(std::function<void()> done) {
  boost::asio::post(strand_, [self = shared_from_this(), done = std::move(done)] {
    self->instance_.dead = true;
    if (self->instance_.worker) {
      try {
        self->instance_.worker->before_kill();
      } catch (const std::exception& e) {
        logger("host.worker")->warn("{} before_kill threw: {}", self->self_, e.what());
      } catch (...) {
        logger("host.worker")->warn("{} before_kill threw", self->self_);
      }
      self->instance_.worker.reset();
    }
    self->instance_.held.clear();
    // Messages it never finished go back to the owner as failed (at-least-once: to the broker).
    if (auto owner = self->owner_.lock()) {
      if (self->handling_.busy)
        owner->worker_failed(self->index_, self->handling_.delivery, "worker stopped", {});
      for (auto& queued : self->mailbox_)
        owner->worker_failed(self->index_, queued.second, "worker stopped", {});
    }
    if (self->handling_.busy) self->end_delivery("worker stopped");
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
  if (handling_.busy || instance_.dead || instance_.suspended || !instance_.worker || gating_.waiting)
    return false;
  if (gating_.gate) {
    if (!gating_.wake)
      gating_.wake = [weak = weak_from_this()] {
        if (auto self = weak.lock())
          boost::asio::post(self->strand_, [self] {
            self->gating_.waiting = false;
            self->run_next();
          });
      };
    auto verdict = gating_.gate->try_start(rate_gate::clock::now(), gating_.wake);
    if (!verdict.allowed) {
      gating_.waiting = true;
      if (verdict.retry_at) {
        // Only while a message waits: an idle pool runs no timer.
        auto timer = std::make_shared<boost::asio::steady_timer>(strand_, *verdict.retry_at);
        timer->async_wait([timer, wake = gating_.wake](boost::system::error_code ec) {
          if (!ec) wake();
        });
      }
      return false;
    }
  }
  return true;
}

void worker_cell::begin(message&& m, std::uint64_t id) {
  handling_.busy = true;
  handling_.since = std::chrono::steady_clock::now();
  handling_.delivery = id;
  hop_ = hop::begin(m);
  invoke(std::move(m), true);
}

void worker_cell::invoke(message&& m, bool is_delivery) {
  // A reply is handled in the middle of a delivery: keep that delivery's message as "current".
  message previous;
  hop previous_hop;
  if (!is_delivery) {
    previous = worker_access::take_current(*instance_.worker);
    // An answer is a hop of its own (its span ends when on_receive returns); the delivery's resumes.
    previous_hop = std::exchange(hop_, hop::begin(m));
  }
  // The message is the worker's "current" (what reply() and done() read), moved rather than copied:
  // nothing sets it again while on_receive runs (a reply comes through the strand, later).
  worker_access::set_current(*instance_.worker, std::move(m));
  std::string error;
  try {
    instance_.worker->on_receive(worker_access::current(*instance_.worker));
  } catch (const rate_limited& e) {
    if (!is_delivery) {
      hop_.end(self_, "reply", e.what());
      hop_ = std::move(previous_hop);
      // What backs off is the delivery held (backoff() hands "current" to the owner to try again),
      // never the reply.
      if (instance_.worker) worker_access::set_current(*instance_.worker, std::move(previous));
    }
    if (is_delivery || handling_.busy) backoff(e.delay(), e.what());
    return;
  } catch (const std::exception& e) {
    error = std::string("on_receive threw: ") + e.what();
  } catch (...) {
    error = "on_receive threw a non-standard exception";
  }
  if (!is_delivery) {
    hop_.end(self_, "reply", error);
    hop_ = std::move(previous_hop);
  }
  if (!error.empty()) return crashed(error);
  if (!is_delivery && instance_.worker) worker_access::set_current(*instance_.worker, std::move(previous));
}

void worker_cell::crashed(const std::string& what) {
  if (instance_.suspended || instance_.dead) return;
  logger("host.worker")->error("{} worker {}: {}", self_, id_, what);
  std::uint64_t failed = handling_.busy ? handling_.delivery : 0;
  if (handling_.busy) end_delivery(what);
  instance_.suspended = true;  // nothing runs until the owner decides
  if (auto owner = owner_.lock()) owner->worker_crashed(index_, failed, what);
}

void worker_cell::supervise(directive d, std::chrono::milliseconds delay) {
  boost::asio::post(strand_, [self = shared_from_this(), d, delay] {
    if (self->instance_.dead) return;
    switch (d) {
      case directive::resume: {
        self->instance_.suspended = false;
        // What came due while it waited runs now, in order (if one crashes it again, the rest wait
        // for the next directive, held again by run_callback).
        auto held = std::move(self->instance_.held);
        self->instance_.held.clear();
        for (auto& h : held) self->run_callback(self->instance_.epoch, std::move(h.fn), h.threw);
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
                                                                          self->handling_.since);
    pong(self->handling_.busy, self->handling_.busy ? busy_for : std::chrono::milliseconds(0));
  });
}

void worker_cell::fail_current(std::string what) {
  boost::asio::post(strand_, [self = shared_from_this(), what = std::move(what)] {
    if (self->handling_.busy) self->crashed(what);
  });
}

void worker_cell::replace_instance() {
  if (instance_.dead) return;
  try {
    if (instance_.worker) instance_.worker->before_kill();
  } catch (...) {
    // The instance being replaced already failed; its before_kill may fail too.
  }
  instance_.worker.reset();
  instance_.held.clear();
  id_ = new_uuid();
  auto made = create();
  if (!made) return stop_for_good("cannot restart the worker: " + made.error());
  instance_.suspended = false;
  logger("host.worker")->info("{}: worker restarted as {}", self_, id_);
  if (auto owner = owner_.lock()) owner->worker_up(index_, id_);
  start();
  boost::asio::post(strand_, [self = shared_from_this()] { self->run_next(); });
}

void worker_cell::stop_for_good(const std::string& why) {
  instance_.dead = true;
  instance_.suspended = false;
  instance_.held.clear();
  try {
    if (instance_.worker) instance_.worker->before_kill();
  } catch (...) {
  }
  instance_.worker.reset();
  if (auto owner = owner_.lock()) {
    // The slot goes down; what waited in its mailbox goes back to the broker.
    for (auto& queued : mailbox_) owner->worker_failed(index_, queued.second, why, {});
    owner->worker_failed(index_, 0, why, {});
  }
  mailbox_.clear();
}

}  // namespace dde::runtime
