// requester: asks `to` `count` times (`concurrency` asks in flight) and checks that every reply
// comes back to this very instance; records round-trip times.
//   args: {"to": "sys/supplier", "count": 100, "concurrency": 1, "stats_dir": "", "rtt_log": false,
//          "timeout_ms": 0, "start_file": "", "warmup": 0}
//   warmup: asks first this many times, one after another, recording nothing (the path's queues
//   declared, its connections open and its code paged in, as a raw client's are before its clock
//   starts); then start_file: asks nothing until that file exists (looked for every 2 ms), so that
//   requesters deployed one after another start together, once the last is up.
//   timeout_ms > 0: an ask unanswered that long is counted as lost and the next one is asked (a reply
//   that comes later counts as late).
//   stats_dir/requester-PID-ID.json: {"asked","warmed","replied","misrouted","lost","late",
//     "first_us","last_us","rtt_us": {"p50","p90","p99","max"}}, written once warmed, on a loss or a
//     late reply, once a second while asking, and when finished.
//   with rtt_log, once finished: stats_dir/requester-PID-ID.rtt, every round trip in µs, one a line,
//     written after the last stats.
#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

namespace {

class requester : public dde::worker {
 public:
  requester()
      : to_(dde::samples::arg_or<std::string>(args(), "to", "")),
        count_(dde::samples::arg_or<std::int64_t>(args(), "count", 100)),
        concurrency_(dde::samples::arg_or<std::int64_t>(args(), "concurrency", 1)),
        stats_dir_(dde::samples::arg_or<std::string>(args(), "stats_dir", "")),
        rtt_log_(dde::samples::arg_or<bool>(args(), "rtt_log", false)),
        timeout_ms_(dde::samples::arg_or<std::int64_t>(args(), "timeout_ms", 0)),
        start_file_(dde::samples::arg_or<std::string>(args(), "start_file", "")),
        warming_(dde::samples::arg_or<std::int64_t>(args(), "warmup", 0)) {
    if (to_.empty()) throw std::invalid_argument("requester needs args.to, the address to ask");
  }

  void on_start() override {
    if (warming_ > 0) return warm_up();
    auto after_delay = [this](auto delay, auto fn) { after(delay, std::move(fn)); };
    dde::samples::when_file_exists(start_file_, after_delay, [this] { begin(); });
  }

  void on_receive(const dde::message& msg) override {
    if (!msg.is_reply()) return done();
    const auto& body = msg.body();
    auto n = body.is_object() ? body.value("n", std::int64_t(-1)) : -1;
    if (n == warmup_n && body.value("requester", std::string()) == worker_id() && warming_ > 0) {
      if (--warming_ == 0) write_stats(true);  // "warmed": 1
      return on_start();
    }
    auto it = sent_us_.find(n);
    if (body.is_object() && body.value("requester", std::string()) == worker_id() && it == sent_us_.end() &&
        n >= 0 && n < asked_ && timeout_ms_ > 0) {
      ++late_;  // answered after it was given up as lost: its successor was asked then
      return write_stats();
    }
    if (!body.is_object() || body.value("requester", std::string()) != worker_id() || it == sent_us_.end()) {
      ++misrouted_;
    } else {
      last_us_ = dde::samples::now_us();
      rtt_us_.push_back(last_us_ - it->second);
      sent_us_.erase(it);
      ++replied_;
    }
    if (asked_ < count_) ask_next();
    write_stats();
  }

 private:
  void begin() {
    first_us_ = dde::samples::now_us();
    // Progress goes out once a second, each requester at its own phase: requesters started together
    // and writing together every 200 ms stalled the asks in flight of a pool in one isolate system
    // for a few ms each time (every worker's file on the same thread at once), the tail of the round
    // trips measured.
    last_write_us_ = first_us_ - std::int64_t(std::hash<std::string>{}(worker_id()) % progress_period_us);
    for (std::int64_t i = 0; i < concurrency_ && asked_ < count_; ++i) ask_next();
    write_stats();
  }

  void ask_next() {
    const auto n = asked_++;
    sent_us_[n] = dde::samples::now_us();
    ask({{"requester", worker_id()}, {"n", n}}, to_);
    if (timeout_ms_ > 0) after(std::chrono::milliseconds(timeout_ms_), [this, n] { give_up(n); });
  }

  static constexpr std::int64_t warmup_n = -2;
  static constexpr std::int64_t progress_period_us = 1000000;
  void warm_up() { ask({{"requester", worker_id()}, {"n", warmup_n}}, to_); }

  void give_up(std::int64_t n) {
    if (sent_us_.erase(n) == 0) return;  // answered in time
    ++lost_;
    if (asked_ < count_) ask_next();
    write_stats();
  }

  void write_stats(bool now_please = false) {
    bool finished = replied_ + misrouted_ + lost_ >= count_;
    auto now = dde::samples::now_us();
    if (!finished && !now_please && now - last_write_us_ < progress_period_us) return;
    last_write_us_ = now;
    auto sorted = rtt_us_;
    std::sort(sorted.begin(), sorted.end());
    auto name = "requester-" + dde::samples::pid_text() + "-" + worker_id();
    auto pct = [&](double p) -> std::int64_t {
      if (sorted.empty()) return 0;
      return sorted[std::min(sorted.size() - 1, std::size_t(p * double(sorted.size())))];
    };
    dde::samples::write_stats(stats_dir_, name + ".json",
                              {{"asked", asked_},
                               {"warmed", warming_ == 0 ? 1 : 0},
                               {"first_us", first_us_},
                               {"last_us", last_us_},
                               {"replied", replied_},
                               {"misrouted", misrouted_},
                               {"lost", lost_},
                               {"late", late_},
                               {"finished", finished},
                               {"rtt_us",
                                {{"p50", pct(0.5)},
                                 {"p90", pct(0.9)},
                                 {"p99", pct(0.99)},
                                 {"max", sorted.empty() ? 0 : sorted.back()}}}});
    // The .rtt lands after the last stats: whoever waits for it (the suite, bench/profile/rr.sh)
    // then reads this requester's final figures.
    if (finished && rtt_log_ && !stats_dir_.empty() && !rtt_written_) {
      rtt_written_ = true;
      std::ofstream out(std::filesystem::path(stats_dir_) / (name + ".rtt.tmp"));
      for (auto us : rtt_us_) out << us << "\n";
      out.close();
      std::error_code ec;
      std::filesystem::rename(std::filesystem::path(stats_dir_) / (name + ".rtt.tmp"),
                              std::filesystem::path(stats_dir_) / (name + ".rtt"), ec);
    }
  }

  std::string to_;
  std::int64_t count_, concurrency_;
  std::string stats_dir_;
  bool rtt_log_, rtt_written_ = false;
  std::int64_t timeout_ms_;
  std::string start_file_;
  std::int64_t warming_;  ///< warm-up asks still to go
  std::int64_t first_us_ = 0, last_us_ = 0, lost_ = 0, late_ = 0;
  std::int64_t asked_ = 0, replied_ = 0, misrouted_ = 0, last_write_us_ = 0;
  std::map<std::int64_t, std::int64_t> sent_us_;
  std::vector<std::int64_t> rtt_us_;
};

}  // namespace

DDE_WORKER(requester)
