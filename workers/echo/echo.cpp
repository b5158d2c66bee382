// echo: answers every message with {"echo": <body>, "version": ECHO_VERSION, "worker": <id>}.
// Built twice, as echo_v1 and echo_v2, for hot-deployment tests and demos. With args.log_dir set,
// each numbered message (from `producer`) is also logged as "SEQ vVERSION MICROS REDELIVERED WORKER"
// (wall clock; 1 when the broker delivered it before; the worker instance's id) in
// log_dir/echo-PID.log. With args.work_ms, each message takes that long (a timer, not a busy wait),
// the seqs in args.slow_on take args.slow_ms instead, and each end is logged as "SEQ MICROS" in
// log_dir/done-PID.log. before_kill logs "WORKER-ID DONE" (the messages this instance finished) in
// log_dir/killed-PID.log.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

#ifndef ECHO_VERSION
#define ECHO_VERSION 1
#endif

namespace {

class echo : public dde::worker {
 public:
  echo()
      : work_ms_(dde::samples::arg_or<int>(args(), "work_ms", 0)),
        slow_ms_(dde::samples::arg_or<int>(args(), "slow_ms", 0)),
        slow_on_(args().value("slow_on", nlohmann::json::array())) {
    auto dir = dde::samples::arg_or<std::string>(args(), "log_dir", "");
    if (!dir.empty()) {
      auto path = dir + "/echo-" + dde::samples::pid_text() + ".log";
      log_fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      kill_log_ = dir + "/killed-" + dde::samples::pid_text() + ".log";
      auto done_path = dir + "/done-" + dde::samples::pid_text() + ".log";
      if (work_ms_ > 0 || slow_ms_ > 0) done_fd_ = ::open(done_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
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
      std::string line = std::to_string(msg.body().value("seq", -1)) + " v" + std::to_string(ECHO_VERSION) + " " +
                         std::to_string(dde::samples::now_us()) + (msg.redelivered() ? " 1 " : " 0 ") + worker_id() +
                         "\n";
      if (::write(log_fd_, line.data(), line.size()) < 0) {
        // A test aid: a failed write shows up as a missing line.
      }
    }
    if (msg.sender() != "external") reply({{"echo", msg.body()}, {"version", ECHO_VERSION}, {"worker", worker_id()}});
    auto seq = msg.body().is_object() ? msg.body().value("seq", -1) : -1;
    bool slow = std::find(slow_on_.begin(), slow_on_.end(), nlohmann::json(seq)) != slow_on_.end();
    int ms = slow ? slow_ms_ : work_ms_;
    if (ms <= 0) {
      ++finished_;
      return done();
    }
    after(std::chrono::milliseconds(ms), [this, seq] {
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
  int log_fd_ = -1;
  int done_fd_ = -1;
  std::string kill_log_;
  std::uint64_t finished_ = 0;
};

}  // namespace

DDE_WORKER(echo)
