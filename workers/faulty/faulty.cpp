// faulty: a consumer that misbehaves on chosen messages, for supervision tests.
//   args: {"throw_on": [seq...], "throw_once_on": [seq...], "crash_on": [seq...], "hang_on": [seq...],
//          "hang_once_on": [seq...], "log_dir": "", "throw_in_constructor": false,
//          "backoff_on": [seq...], "backoff_times": 1, "backoff_ms": 500, "backoff_throw": false}
// A numbered message (from `producer`) whose seq is listed is thrown on (every time, or only the
// first time this process sees it), crashes the process (std::abort, as native code may), or is
// never done(). A seq in backoff_on is rate limited (`backoff`, or `throw dde::rate_limited` with
// backoff_throw) its first backoff_times times in this process, each logged as "SEQ MICROS" to
// log_dir/backoff-PID.log. Every message handled normally is appended as "SEQ MICROS" (its start) to
// log_dir/faulty-PID.log before done(); every one thrown on, to log_dir/thrown-PID.log before the throw.
// A message {"action": "throw"|"crash"|"hang"} does the same on demand; others get {"ok": true}.
// {"action": "later", "delay_ms": D, "later_seq": S, "to": "sys/pool"} sends {"seq": S} to `to` (default:
// this pool) with send_after(D), then is handled as any other message.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

namespace {

std::set<std::int64_t> seq_set(const nlohmann::json& args, const char* key) {
  std::set<std::int64_t> out;
  if (auto it = args.find(key); it != args.end() && it->is_array())
    for (auto& v : *it) out.insert(v.get<std::int64_t>());
  return out;
}

/// Shared by every instance in the process: which seqs already threw once, and the log file.
struct shared_state {
  std::mutex mutex;
  std::set<std::int64_t> thrown, hung;
  std::map<std::int64_t, int> backed_off;
  int log_fd = -1, backoff_fd = -1, thrown_fd = -1;
};
shared_state& state() {
  static shared_state s;
  return s;
}

class faulty : public dde::worker {
 public:
  faulty()
      : throw_on_(seq_set(args(), "throw_on")),
        throw_once_on_(seq_set(args(), "throw_once_on")),
        crash_on_(seq_set(args(), "crash_on")),
        hang_on_(seq_set(args(), "hang_on")),
        hang_once_on_(seq_set(args(), "hang_once_on")),
        backoff_on_(seq_set(args(), "backoff_on")),
        backoff_times_(dde::samples::arg_or<int>(args(), "backoff_times", 1)),
        backoff_ms_(dde::samples::arg_or<int>(args(), "backoff_ms", 500)),
        backoff_throw_(dde::samples::arg_or<bool>(args(), "backoff_throw", false)) {
    if (args().value("throw_in_constructor", false)) throw std::runtime_error("faulty constructor, as asked");
    auto dir = dde::samples::arg_or<std::string>(args(), "log_dir", "");
    std::lock_guard lock(state().mutex);
    if (!dir.empty() && state().log_fd < 0) {
      auto path = dir + "/faulty-" + dde::samples::pid_text() + ".log";
      state().log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      auto backoffs = dir + "/backoff-" + dde::samples::pid_text() + ".log";
      state().backoff_fd = ::open(backoffs.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      auto thrown = dir + "/thrown-" + dde::samples::pid_text() + ".log";
      state().thrown_fd = ::open(thrown.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
  }

  void on_receive(const dde::message& msg) override {
    const auto& body = msg.body();
    auto action = body.is_object() ? body.value("action", std::string()) : std::string();
    auto seq = body.is_object() ? body.value("seq", std::int64_t(-1)) : std::int64_t(-1);
    auto started = dde::samples::now_us();
    if (backoff_on_.count(seq)) {
      std::unique_lock lock(state().mutex);
      if (state().backed_off[seq]++ < backoff_times_) {
        append(state().backoff_fd, std::to_string(seq) + " " + std::to_string(started) + "\n");
        lock.unlock();
        auto why = "asked to back off on " + std::to_string(seq);
        if (backoff_throw_) throw dde::rate_limited(std::chrono::milliseconds(backoff_ms_), why);
        return backoff(std::chrono::milliseconds(backoff_ms_), why);
      }
    }
    auto thrown = [&] {
      append(state().thrown_fd, std::to_string(seq) + " " + std::to_string(started) + "\n");
    };
    if (action == "throw" || throw_on_.count(seq)) {
      std::lock_guard lock(state().mutex);
      thrown();
      throw std::runtime_error("asked to throw on " + std::to_string(seq));
    }
    if (throw_once_on_.count(seq)) {
      std::lock_guard lock(state().mutex);
      if (state().thrown.insert(seq).second) {
        thrown();
        throw std::runtime_error("asked to throw once on " + std::to_string(seq));
      }
    }
    if (action == "crash" || crash_on_.count(seq)) std::abort();
    if (action == "later")
      send_after(std::chrono::milliseconds(body.value("delay_ms", 1000)),
                 {{"seq", body.value("later_seq", -1)}}, body.value("to", self()));
    if (action == "hang" || hang_on_.count(seq)) return;
    if (hang_once_on_.count(seq)) {
      std::lock_guard lock(state().mutex);
      if (state().hung.insert(seq).second) return;  // never calls done() for it, the first time
    }
    if (seq >= 0) {
      std::lock_guard lock(state().mutex);
      append(state().log_fd, std::to_string(seq) + " " + std::to_string(started) + "\n");
    }
    if (!msg.sender().empty() && msg.sender() != "external" && action.size())
      reply({{"ok", true}, {"worker", worker_id()}});
    done();
  }

 private:
  static void append(int fd, const std::string& line) {
    if (fd >= 0 && ::write(fd, line.data(), line.size()) < 0) {
      // A test aid: a short write shows up as a missing line.
    }
  }
  std::set<std::int64_t> throw_on_, throw_once_on_, crash_on_, hang_on_, hang_once_on_, backoff_on_;
  int backoff_times_, backoff_ms_;
  bool backoff_throw_;
};

}  // namespace

DDE_WORKER(faulty)
