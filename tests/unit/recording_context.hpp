#pragma once
// A worker_context for driving a worker plugin in a test without a host: it records what the
// worker does, and runs its after() timers only when the test says so.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dde/runtime/plugin_loader.hpp"
#include "dde/worker.hpp"

namespace dde::test {

class recording_context : public worker_context {
 public:
  using clock = std::chrono::steady_clock;
  struct reply_record {
    message to;
    nlohmann::json body;
  };
  struct forward_record {
    message m;
    std::string to;
  };
  struct send_record {
    nlohmann::json body;
    std::string to;
  };
  struct backoff_record {
    std::chrono::milliseconds delay;
    std::string reason;
  };

  explicit recording_context(nlohmann::json args) : args_(std::move(args)) {}

  const nlohmann::json& args() const override { return args_; }
  const std::string& self() const override { return self_; }
  const std::string& worker_id() const override { return id_; }
  void send(nlohmann::json body, std::string, bool, std::string_view to, std::string_view) override {
    sends.push_back({std::move(body), std::string(to)});
  }
  void ask(nlohmann::json, std::string_view) override {}
  void reply(const message& to, nlohmann::json body) override { replies.push_back({to, std::move(body)}); }
  void done() override { ++dones; }
  void backoff(std::chrono::milliseconds delay, std::string_view reason) override {
    backoffs.push_back({delay, std::string(reason)});
  }
  void when_writable(std::function<void()>) override {}
  void after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    timers_.emplace(clock::now() + delay, std::move(fn));
    delays.push_back(delay);
  }
  void log(int, std::string_view text) override { logs.emplace_back(text); }
  void forward(const message& m, std::string_view to) override { forwards.push_back({m, std::string(to)}); }
  void send_after(std::chrono::milliseconds delay, nlohmann::json body, std::string_view to) override {
    delayed_sends.push_back({delay, {std::move(body), std::string(to)}});
  }

  /// Runs the earliest pending timer now, whatever its due time (a test with a fake API clock).
  void fire_next() {
    auto it = timers_.begin();
    auto fn = std::move(it->second);
    timers_.erase(it);
    fn();
  }
  /// Runs pending timers at their due time (this thread waits for each, as a timer would) until
  /// `done` holds or `timeout` passes; false on timeout.
  bool run_timers_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    auto end = clock::now() + timeout;
    while (!done()) {
      if (timers_.empty() || timers_.begin()->first > end) return false;
      std::this_thread::sleep_until(timers_.begin()->first);  // the timer itself, not a guess
      fire_next();
    }
    return true;
  }
  std::size_t pending_timers() const { return timers_.size(); }

  int dones = 0;
  std::vector<reply_record> replies;
  std::vector<send_record> sends;
  std::vector<std::pair<std::chrono::milliseconds, send_record>> delayed_sends;
  std::vector<forward_record> forwards;
  std::vector<backoff_record> backoffs;
  std::vector<std::chrono::milliseconds> delays;
  std::vector<std::string> logs;

 private:
  nlohmann::json args_;
  std::string self_ = "test/pool", id_ = "worker-1";
  std::multimap<clock::time_point, std::function<void()>> timers_;
};

/// A worker plugin from the build's worker directory.
inline std::shared_ptr<runtime::worker_plugin> load_worker(const std::string& name) {
  auto p = runtime::worker_plugin::load(std::string(DDE_WORKER_DIR) + "/lib" + name + ".so");
  if (!p) throw std::runtime_error(p.error());
  return p.value();
}

/// A message as the host would hand it over.
inline message make_message(nlohmann::json body, std::string sender = "src/producer",
                            std::string reply_to = {}) {
  static int next = 0;
  message m;
  m.body_ = std::move(body);
  m.id_ = "id-" + std::to_string(++next);
  m.sender_ = std::move(sender);
  m.reply_to_ = std::move(reply_to);
  return m;
}

/// One instance of a sample worker plugin, driven through a recording_context.
struct plugin_harness {
  explicit plugin_harness(const std::string& name) : plugin(load_worker(name)) {}
  /// Constructs a fresh instance with `args` (throws what the plugin's constructor threw).
  void create(nlohmann::json args) {
    w.reset();
    ctx = std::make_unique<recording_context>(std::move(args));
    auto made = plugin->create(ctx.get());
    if (!made) throw std::runtime_error(made.error());
    w = std::move(made.value());
  }
  void receive(const message& m) {
    worker_access::set_current(*w, m);
    w->on_receive(m);
  }
  std::shared_ptr<runtime::worker_plugin> plugin;
  std::unique_ptr<recording_context> ctx;
  runtime::worker_plugin::worker_ptr w;
};

}  // namespace dde::test
