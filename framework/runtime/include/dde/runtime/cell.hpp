#pragma once
// What a router sees of one worker slot (a local worker_cell or a proxy to a remote worker), and
// what a cell needs from whoever owns it (a router, or the Isolate Deployer for remote workers).

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "dde/envelope.hpp"
#include "dde/message.hpp"
#include "dde/names.hpp"
#include "dde/runtime/plugin_loader.hpp"

namespace dde::runtime {

/// A supervisor's answer to a worker's failure.
enum class directive { resume, restart, stop };

class cell {
 public:
  virtual ~cell() = default;
  /// Prepares the worker; an error refuses the deployment.
  virtual result<bool> create() = 0;
  virtual void start() = 0;
  /// Queues a pool message; the owner hears `worker_done`/`worker_failed` with `delivery_id`.
  virtual void post_message(message&& m, std::uint64_t delivery_id) = 0;
  /// A pool message and its delivery id.
  using posting = std::pair<message, std::uint64_t>;
  /// Queues several pool messages in order, as post_message queues each (a local cell: in one hop).
  virtual void post_messages(std::vector<posting> batch) {
    for (auto& [m, id] : batch) post_message(std::move(m), id);
  }
  /// Hands a reply to an `ask` to the worker.
  virtual void post_reply(message m) = 0;
  /// Stops the worker (`before_kill` runs), then calls `done`.
  virtual void kill(std::function<void()> done) = 0;
  virtual std::string id() const = 0;
  /// After `worker_crashed`: carry on, replace the instance (after `delay`), or stop for good.
  virtual void supervise(directive d, std::chrono::milliseconds delay) = 0;
  /// PING: `pong(busy, busy_for)` runs once the worker's strand is free to answer.
  virtual void ping(std::function<void(bool busy, std::chrono::milliseconds busy_for)> pong) = 0;
  /// Treats the message being handled as failed with `what` (reported through `worker_crashed`).
  virtual void fail_current(std::string what) = 0;
};

class cell_owner {
 public:
  virtual ~cell_owner() = default;
  virtual void worker_done(std::size_t index, std::uint64_t delivery_id) = 0;
  /// A message failed (`delivery_id` 0: none was being handled). `new_id` empty: the slot is down.
  virtual void worker_failed(std::size_t index, std::uint64_t delivery_id, std::string what,
                             std::string new_id) = 0;
  /// The slot is up again (a remote worker respawned, or restarted) under `id`.
  virtual void worker_up(std::size_t index, std::string id) = 0;
  /// The worker threw (from on_receive, on_start or a callback; `delivery_id` 0 when no message was
  /// being handled). The cell holds its mailbox until the owner answers with `cell::supervise`.
  virtual void worker_crashed(std::size_t index, std::uint64_t delivery_id, std::string what) = 0;
  /// The worker ended message `delivery_id` as rate-limited (`backoff` or `rate_limited`): pause the
  /// pool for `delay` and try `m` (the message it was handling) again.
  virtual void worker_rate_limited(std::size_t index, std::uint64_t delivery_id,
                                   std::chrono::milliseconds delay, std::string reason, message m) = 0;
  /// Sends `e` to `topic` (split for the broker by the top level; whole to a remote worker's proxy).
  virtual void enqueue(std::string topic, delivery_mode mode, const envelope& e) = 0;
  /// Asked (from the worker's strand) right before a reply to `message_id` is sent: false when another
  /// worker already answered it (first-reply-wins pools), and the reply is dropped.
  virtual bool claim_reply(const std::string& message_id) {
    (void)message_id;
    return true;
  }
  virtual void when_writable(std::function<void()> fn) = 0;
  /// The isolate-system instance replies to an `ask` come back to.
  virtual const std::string& instance() const = 0;
};

}  // namespace dde::runtime
