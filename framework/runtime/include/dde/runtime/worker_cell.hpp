#pragma once
// One worker instance: its strand, its mailbox, and the worker_context the plugin calls into.
// A worker handles one message at a time and gets the next only after `done()`.

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dde/envelope.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/runtime/cell.hpp"
#include "dde/runtime/hop.hpp"
#include "dde/runtime/rate_gate.hpp"
#include "dde/worker.hpp"

namespace dde::runtime {

class worker_cell : public cell, public worker_context, public std::enable_shared_from_this<worker_cell> {
 public:
  worker_cell(boost::asio::io_context& io, std::weak_ptr<cell_owner> owner,
              std::shared_ptr<const pool_spec> spec, std::shared_ptr<worker_plugin> plugin,
              std::size_t index);

  /// Constructs the worker instance (on the calling thread); an error if its constructor throws.
  result<bool> create() override;
  /// Runs `on_start` on the cell's strand.
  void start() override;
  /// Queues a pool message; `delivery_id` goes back to the owner with done/failure.
  void post_message(message&& m, std::uint64_t delivery_id) override;
  /// The messages of one batch from the MQS, in one hop to the cell's strand.
  void post_messages(std::vector<posting> batch) override;
  /// Hands a reply to an `ask` straight to the worker (it does not wait for `done()`).
  void post_reply(message m) override;
  /// Calls `before_kill` and destroys the instance, then `done` (on the cell's strand).
  void kill(std::function<void()> done) override;

  /// The current instance's id (changes when the instance is restarted).
  std::string id() const override { return id_; }
  void supervise(directive d, std::chrono::milliseconds delay) override;
  /// The pool's throttle, asked before each message starts (before start()).
  void set_gate(std::shared_ptr<rate_gate> gate) { gating_.gate = std::move(gate); }
  void ping(std::function<void(bool, std::chrono::milliseconds)> pong) override;
  void fail_current(std::string what) override;

  // worker_context
  const nlohmann::json& args() const override;
  const std::string& self() const override { return self_; }
  const std::string& worker_id() const override { return id_; }
  void send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) override;
  void send(nlohmann::json body, std::string bytes, bool is_bytes, std::string_view to,
            std::string_view reply_to) override;
  void ask(nlohmann::json body, std::string_view to) override;
  void reply(const message& to_message, nlohmann::json body) override;
  void done() override;
  void backoff(std::chrono::milliseconds delay, std::string_view reason) override;
  void when_writable(std::function<void()> fn) override;
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override;
  void log(int level, std::string_view text) override;
  void forward(const message& m, std::string_view to) override;

 private:
  /// A message handed over (on the strand): to the worker now, or to the mailbox.
  void take(message&& m, std::uint64_t delivery_id);
  /// Starts the next message of the mailbox when the worker may start one.
  void run_next();
  /// True when the worker may start a message now: idle, alive, and the pool's gate lets it (when the
  /// gate says no, the cell waits for it and runs the mailbox when it opens).
  bool may_start();
  /// Hands `m` to the worker as the delivery `id` (may_start() said yes).
  void begin(message&& m, std::uint64_t id);
  /// Ends the delivery being handled; `error` empty: it succeeded (its span's status).
  void end_delivery(std::string_view error = {});
  void invoke(message&& m, bool is_delivery);
  /// Runs a timer or when_writable callback of the instance of `epoch` (`threw` names it if it throws).
  void run_callback(std::uint64_t epoch, std::function<void()> fn, const char* threw);
  void crashed(const std::string& what);
  void replace_instance();
  void stop_for_good(const std::string& why);
  void publish(std::string topic, delivery_mode mode, envelope e);
  envelope make_envelope(std::string_view to);

  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::weak_ptr<cell_owner> owner_;
  std::shared_ptr<const pool_spec> spec_;
  std::shared_ptr<worker_plugin> plugin_;
  std::size_t index_;
  std::string self_;
  std::string id_;
  /// A timer or when_writable callback that came due while the instance waited for its supervisor.
  struct held_callback {
    std::function<void()> fn;
    const char* threw;  ///< what a crash it causes is called
  };
  /// The worker instance: its object, its number (bumped per instance, so that callbacks of a dead
  /// one are dropped), whether it is dead or suspended after a crash (until the owner's directive),
  /// and its held callbacks (they belong to it: replacing or stopping it drops them).
  struct instance_state {
    worker_plugin::worker_ptr worker;
    std::uint64_t epoch = 0;
    bool dead = false;
    bool suspended = false;
    std::vector<held_callback> held;
  } instance_;
  std::deque<std::pair<message, std::uint64_t>> mailbox_;
  /// The message being handled: whether one is, since when, and its delivery.
  struct handling_state {
    bool busy = false;
    std::chrono::steady_clock::time_point since{};
    std::uint64_t delivery = 0;
  } handling_;
  /// The pool's rate gate: refused by it, the cell waits until a timer or a finishing message wakes
  /// it (`wake`, made once: not a std::function a message).
  struct gate_state {
    std::shared_ptr<rate_gate> gate;
    bool waiting = false;
    std::function<void()> wake;
  } gating_;
  hop hop_;  ///< the trace of what is handled now (a delivery, or a reply in the middle of one)
};

}  // namespace dde::runtime
