#pragma once
// A dde-mqs child process against a test broker, for the tests that drive it over WebSocket.

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dde_test.hpp"

namespace dde::mqs::test {

/// A dde-mqs child process connected to `broker` (debug log, 60 s idle timeout).
class mqs_process {
 public:
  explicit mqs_process(dde::test::rabbitmq_node& broker, std::vector<std::string> extra = {}) {
    using namespace std::chrono_literals;
    port_ = dde::test::free_port();
    std::vector<std::string> argv = {dde::test::bin_path("dde-mqs").string(),
                                     "--port",
                                     std::to_string(port_),
                                     "--broker-host",
                                     broker.host(),
                                     "--broker-port",
                                     std::to_string(broker.port()),
                                     "--log-level",
                                     "debug",
                                     "--idle-timeout-ms",
                                     "60000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<dde::test::child_process>(argv, dde::test::fresh_dir("mqs") / "dde-mqs.log");
    if (!dde::test::wait_until(
            [&] { return log().find("listening on ws://") != std::string::npos || !proc_->running(); }, 20s))
      throw std::runtime_error("dde-mqs did not start:\n" + log());
    if (!proc_->running()) throw std::runtime_error("dde-mqs exited:\n" + log());
  }
  ~mqs_process() { stop(); }
  std::uint16_t port() const { return port_; }
  int pid() const { return proc_->pid(); }
  std::string log() const { return proc_->log(); }
  /// How many times `text` occurs in the log so far.
  std::size_t log_count(const std::string& text) const {
    auto l = log();
    std::size_t n = 0;
    for (auto at = l.find(text); at != std::string::npos; at = l.find(text, at + text.size())) ++n;
    return n;
  }
  /// SIGKILL and wait: nothing is flushed or closed politely.
  void kill9() { proc_->kill9(); }
  /// SIGTERM and wait: the MQS flushes what it accepted and closes its broker connections.
  int stop() { return proc_->running() ? proc_->stop(std::chrono::seconds(10)) : 0; }

 private:
  std::uint16_t port_ = 0;
  std::unique_ptr<dde::test::child_process> proc_;
};

/// A topic name of its own for each test.
inline std::string unique_topic(const std::string& name) {
  return "mqstest." + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand() % 100000);
}

/// Deletes the queue of `topic` and its dead-letter queue.
inline void delete_topic(dde::test::rabbitmq_node& broker, const std::string& topic) {
  broker.delete_queue(topic);
  broker.delete_queue("dde.dead." + topic);
}

}  // namespace dde::mqs::test
