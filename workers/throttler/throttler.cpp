// throttler: the actor between actors (seed 000, the "transparent" throttler). Every message it
// receives goes on to `target` at most `messages` per `perMs` (in every window of that length), in
// order, unchanged: the target sees the original sender, and its reply() goes to the original
// sender or asker, never to the throttler.
//   args: {"target": "sys/pool", "messages": 10, "perMs": 1000, "maxQueued": 10000, "log_dir": ""}
// Without a target, messages queue until a control message sets one. Control messages change it at
// run time and are applied at once (not queued behind the others); an asked one is answered:
//   {"dde.throttler": {"setRate": {"messages": N, "perMs": W}}}  {"dde.throttler": {"setTarget": "s/i"}}
// The rate is per worker instance: deploy the throttler pool with one worker (control messages
// reach one instance too). With log_dir, each forwarded message is logged as "SEQ MICROS" in
// log_dir/throttler-PID.log (SEQ: the body's "seq", else -1; MICROS: the steady clock the throttle
// decided by, so windows over the log are exact).
//
// Delivery: a message is done() (acknowledged to the broker) as soon as it is queued here, so the
// throttler can hold a backlog while pulling the next messages. Messages held here are acked
// already: if this worker restarts or its host dies, they are lost (at-most-once for the backlog).
// At most maxQueued are held: at the limit the throttler stops calling done(), so the broker keeps
// the rest (backpressure, nothing dropped). maxQueued: 1 acknowledges a message only once it was
// forwarded, which keeps at-least-once end to end at the price of the backlog living in the broker.
#include "dde/throttler.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"
#include "throttler_control.hpp"

namespace {

dde::throttle_rate rate_arg(const nlohmann::json& args) {
  nlohmann::json rate = {{"messages", args.contains("messages") ? args["messages"] : nlohmann::json()},
                         {"perMs", args.contains("perMs") ? args["perMs"] : nlohmann::json()}};
  return dde::samples::parse_rate(rate, "throttler: args");
}

class throttler_worker : public dde::worker {
 public:
  throttler_worker()
      : throttle_(*this, rate_arg(args())),
        max_queued_(dde::samples::arg_or<std::int64_t>(args(), "maxQueued", 10000)) {
    if (max_queued_ < 1 || max_queued_ > 100000000)
      throw std::invalid_argument("throttler: args.maxQueued must be in [1, 100000000], got " +
                                  std::to_string(max_queued_));
    if (args().contains("target") && !args()["target"].is_null())
      set_target(dde::samples::parse_target(args()["target"], "throttler: args.target"));
    auto dir = dde::samples::arg_or<std::string>(args(), "log_dir", "");
    if (!dir.empty()) {
      auto path = dir + "/throttler-" + dde::samples::pid_text() + ".log";
      log_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (log_fd_ < 0) throw std::invalid_argument("throttler: cannot open " + path);
    }
  }
  ~throttler_worker() override {
    if (log_fd_ >= 0) ::close(log_fd_);
  }

  void on_receive(const dde::message& msg) override {
    std::optional<dde::samples::throttler_control> control;
    try {
      control = dde::samples::parse_control(msg.body());
    } catch (const std::invalid_argument& e) {
      log(4, std::string("refused a control message from ") + msg.sender() + ": " + e.what());
      answer(msg, {{"error", e.what()}});
      return done();
    }
    if (control) return apply(msg, *control);
    throttle_.push(msg);
    // Room left: ask for the next one now. Else done() waits until a delivery makes room.
    if (std::int64_t(throttle_.queued()) < max_queued_)
      done();
    else
      holding_ = true;
  }

 private:
  void apply(const dde::message& msg, const dde::samples::throttler_control& c) {
    // Both in one message: from now on, to the new target at the new rate.
    if (c.target) set_target(*c.target);
    if (c.rate) throttle_.set_rate(*c.rate);
    log_info("throttler: " + std::to_string(throttle_.rate().messages) + " per " +
             std::to_string(throttle_.rate().per.count()) + " ms to " +
             (target_.empty() ? "(no target)" : target_));
    answer(msg, {{"ok", true},
                 {"rate", {{"messages", throttle_.rate().messages}, {"perMs", throttle_.rate().per.count()}}},
                 {"target", target_},
                 {"queued", throttle_.queued()}});
    done();
  }

  /// Answers a control message when its sender waits for one (asked, or gave a replyTo).
  void answer(const dde::message& msg, nlohmann::json body) {
    if (msg.is_ask() || !msg.reply_to().empty())
      reply(msg, {{dde::samples::throttler_control_key, std::move(body)}});
  }

  void set_target(std::string target) {
    target_ = std::move(target);
    throttle_.set_target([this](dde::message m) { deliver(m); });
  }

  void deliver(const dde::message& m) {
    forward(m, target_);
    if (log_fd_ >= 0) {
      auto seq = m.body().is_object() ? m.body().value("seq", std::int64_t(-1)) : std::int64_t(-1);
      auto at =
          std::chrono::duration_cast<std::chrono::microseconds>(throttle_.last_delivery().time_since_epoch());
      std::string line = std::to_string(seq) + " " + std::to_string(at.count()) + "\n";
      if (::write(log_fd_, line.data(), line.size()) < 0) {
        // A test aid: a failed write shows up as a missing line.
      }
    }
    if (holding_ && std::int64_t(throttle_.queued()) < max_queued_) {
      holding_ = false;
      done();
    }
  }

  dde::throttler<dde::message> throttle_;
  std::int64_t max_queued_;
  std::string target_;
  bool holding_ = false;  ///< the message being handled waits for room before done()
  int log_fd_ = -1;
};

}  // namespace

DDE_WORKER(throttler_worker)
