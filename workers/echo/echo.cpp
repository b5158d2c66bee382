// echo: answers every message with {"echo": <body>, "version": ECHO_VERSION, "worker": <id>}.
// Built twice, as echo_v1 and echo_v2, for hot-deployment tests and demos. With args.log_dir set,
// each numbered message (from `producer`) is also logged as "SEQ vVERSION MICROS REDELIVERED WORKER"
// (wall clock; 1 when the broker delivered it before; the worker instance's id) in
// log_dir/echo-PID.log. With args.work_ms, each message takes that long (a timer, not a busy wait),
// the seqs in args.slow_on take args.slow_ms instead, and each end is logged as "SEQ MICROS" in
// log_dir/done-PID.log. before_kill logs "WORKER-ID DONE" (the messages this instance finished) in
// log_dir/killed-PID.log. For first-reply-wins routers: args.reply_when_done answers when the work
// ends rather than when the message arrives, and args.slow_instances lists the instances (by the order
// they were constructed in this process, from 0) whose every message takes args.slow_ms.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

#ifndef ECHO_VERSION
#define ECHO_VERSION 1
#endif

namespace {

std::atomic<int> instances_made{0};

class echo : public dde::worker {
 public:
  echo()
      : work_ms_(dde::samples::arg_or<int>(args(), "work_ms", 0)),
        slow_ms_(dde::samples::arg_or<int>(args(), "slow_ms", 0)),
        slow_on_(args().value("slow_on", nlohmann::json::array())),
        reply_when_done_(dde::samples::arg_or<bool>(args(), "reply_when_done", false)) {
    auto slow_instances = args().value("slow_instances", nlohmann::json::array());
    slow_instance_ = std::find(slow_instances.begin(), slow_instances.end(),
                               nlohmann::json(instances_made++)) != slow_instances.end();
    auto dir = dde::samples::arg_or<std::string>(args(), "log_dir", "");
    if (!dir.empty()) {
      auto path = dir + "/echo-" + dde::samples::pid_text() + ".log";
      log_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      kill_log_ = dir + "/killed-" + dde::samples::pid_text() + ".log";
      auto done_path = dir + "/done-" + dde::samples::pid_text() + ".log";
      if (work_ms_ > 0 || slow_ms_ > 0)
        done_fd_ = ::open(done_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
  }
  ~echo() override {
    if (log_fd_ >= 0) ::close(log_fd_);
    if (done_fd_ >= 0) ::close(done_fd_);
  }

  void before_kill() override {
    if (kill_log_.empty()) return;
    int fd = ::open(kill_log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    std::string line = worker_id() + " " + std::to_string(finished_) + "\n";
    if (::write(fd, line.data(), line.size()) < 0) {
      // A test aid: a failed write shows up as a missing line.
    }
    ::close(fd);
  }

  void on_receive(const dde::message& msg) override {
    if (log_fd_ >= 0 && msg.body().is_object() && msg.body().contains("seq")) {
      std::string line = std::to_string(msg.body().value("seq", -1)) + " v" + std::to_string(ECHO_VERSION) +
                         " " + std::to_string(dde::samples::now_us()) + (msg.redelivered() ? " 1 " : " 0 ") +
                         worker_id() + "\n";
      if (::write(log_fd_, line.data(), line.size()) < 0) {
        // A test aid: a failed write shows up as a missing line.
      }
    }
    nlohmann::json answer = {{"echo", msg.body()}, {"version", ECHO_VERSION}, {"worker", worker_id()}};
    // The supplier's fields, so a requester can check its replies.
    for (auto field : {"requester", "n"})
      if (msg.body().is_object() && msg.body().contains(field)) answer[field] = msg.body()[field];
    bool answers = msg.sender() != "external";
    if (answers && !reply_when_done_) reply(answer);
    auto seq = msg.body().is_object() ? msg.body().value("seq", -1) : -1;
    bool slow =
        slow_instance_ || std::find(slow_on_.begin(), slow_on_.end(), nlohmann::json(seq)) != slow_on_.end();
    int ms = slow ? slow_ms_ : work_ms_;
    if (ms <= 0) {
      if (answers && reply_when_done_) reply(answer);
      ++finished_;
      return done();
    }
    if (answers && reply_when_done_) pending_answer_ = std::move(answer);
    after(std::chrono::milliseconds(ms), [this, seq] {
      if (pending_answer_) reply(*std::exchange(pending_answer_, std::nullopt));
      std::string line = std::to_string(seq) + " " + std::to_string(dde::samples::now_us()) + "\n";
      if (done_fd_ >= 0 && ::write(done_fd_, line.data(), line.size()) < 0) {
        // A test aid: a failed write shows up as a missing line.
      }
      ++finished_;
      done();
    });
  }

 private:
  int work_ms_, slow_ms_;
  nlohmann::json slow_on_;
  bool reply_when_done_;
  bool slow_instance_ = false;
  std::optional<nlohmann::json> pending_answer_;  ///< reply_when_done: sent as the work ends
  int log_fd_ = -1;
  int done_fd_ = -1;
  std::string kill_log_;
  std::uint64_t finished_ = 0;
};

}  // namespace

DDE_WORKER(echo)
