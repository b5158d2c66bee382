// consumer: receives numbered messages (from `producer`), counts them, and optionally records each
// sequence number so tests can check that none was lost.
//   args: {"stats_dir": "", "log_dir": "", "work_ms": 0, "start_file": ""}
//   start_file: each worker holds its first message, uncounted, until that file exists (looked for
//   every 2 ms), so that consumers deployed one after another start together, once the last holds one.
//   stats_dir/consumer-PID.json:
//   {"received","holding","unique","duplicates","redelivered","sum","first_us","last_us",
//                                 "first_second","max_gap_us","max_gap_from_us","max_gap_to_us","gaps"}
//   (wall-clock µs; first_second: messages received within a second of this process's first, so a
//   benchmark can tell a first burst from the rate sustained after it; max_gap_*: the longest pause between
//   two consecutive receipts in this process, from the receipt before it to the one after it; "gaps": the
//   longest few pauses, longest first, each [from_us, to_us]: an outage is the longest one that ends after it
//   began, which is not always the longest of the whole run when a loaded machine stalled the flow for longer
//   before). A message that carries "sent_us" (the `producer` sample's "stamp") adds to "latency_count",
//   "latency_p50_us", "latency_p99_us" and "latency_max_us": its time from send to receipt, for messages
//   received after this process's first second (the flow set up, as first_second keeps the burst apart).
//   log_dir/consumer-PID.log: one sequence number per line, written before the message is acked.
#include <fcntl.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <utility>
#include <vector>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

namespace {

/// Latencies in µs, counted in buckets about 1.5 % wide (64 per power of two past 128 µs): recording
/// and reading a percentile cost the same however many were recorded, so writing the stats every
/// 200 ms does not hold up the messages being timed.
class latency_histogram {
 public:
  void add(std::int64_t us) {
    const auto v = std::uint64_t(std::max<std::int64_t>(us, 0));
    const auto i = index(v);
    if (i >= counts_.size()) counts_.resize(i + 1);
    ++counts_[i];
    ++count_;
    max_ = std::max(max_, v);
  }
  std::uint64_t count() const { return count_; }
  /// The `q` quantile (nearest rank), as its bucket's upper bound (the largest value for q = 1); 0 with none.
  std::int64_t quantile(double q) const {
    if (count_ == 0) return 0;
    if (q >= 1) return std::int64_t(max_);
    const auto rank = std::uint64_t(q * double(count_)) + 1;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i)
      if ((seen += counts_[i]) >= rank) return std::int64_t(std::min(upper(i), max_));
    return std::int64_t(max_);
  }

 private:
  static constexpr unsigned sub = 64;  ///< buckets per power of two, past the exact ones below 2 * sub
  static std::size_t index(std::uint64_t v) {
    if (v < 2 * sub) return std::size_t(v);
    const unsigned shift = unsigned(std::bit_width(v)) - 7;  // v >> shift is in [64, 128)
    return std::size_t(2 * sub + (shift - 1) * sub + ((v >> shift) - sub));
  }
  static std::uint64_t upper(std::size_t i) {
    if (i < 2 * sub) return i;
    const auto shift = unsigned((i - 2 * sub) / sub) + 1;
    const auto mantissa = std::uint64_t((i - 2 * sub) % sub + sub);
    return ((mantissa + 1) << shift) - 1;
  }
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0, max_ = 0;
};

/// Shared by every consumer instance in this process.
struct tally {
  std::mutex mutex;
  std::int64_t received = 0, holding = 0, unique = 0, duplicates = 0, redelivered = 0, sum = 0, first_us = 0,
               last_us = 0;
  std::int64_t first_second = 0;
  std::int64_t max_gap_us = 0, max_gap_from_us = 0, max_gap_to_us = 0;
  static constexpr std::size_t kept_gaps = 8;
  std::vector<std::pair<std::int64_t, std::int64_t>> gaps;  ///< [from, to], longest first
  std::int64_t written_received = -1, written_holding = -1, last_write_us = 0;
  std::vector<bool> seen;
  latency_histogram latencies;  ///< µs from send to receipt, after the first second
  int log_fd = -1;

  void record(std::int64_t seq, bool was_redelivered, std::int64_t sent_us) {
    std::lock_guard lock(mutex);
    auto now = dde::samples::now_us();
    if (sent_us > 0 && received > 0 && now - first_us > 1000000) latencies.add(now - sent_us);
    if (received == 0) first_us = last_us = now;
    if (now - last_us > max_gap_us) {
      max_gap_us = now - last_us;
      max_gap_from_us = last_us;
      max_gap_to_us = now;
    }
    keep_gap(last_us, now);
    last_us = now;
    ++received;
    if (now - first_us <= 1000000) first_second = received;
    if (was_redelivered) ++redelivered;
    if (seq >= 0) {
      if (std::size_t(seq) >= seen.size()) seen.resize(std::size_t(seq) * 2 + 1024);
      if (seen[std::size_t(seq)]) {
        ++duplicates;
      } else {
        seen[std::size_t(seq)] = true;
        ++unique;
        sum += seq;
      }
    }
    if (log_fd >= 0) {
      // One write per message, before the ack: a kill -9 cannot lose a line the broker forgot.
      std::string line = std::to_string(seq) + "\n";
      if (::write(log_fd, line.data(), line.size()) < 0) {
        // The log is a test aid; a full disk shows up as missing lines, not as a crash.
      }
    }
  }

  void keep_gap(std::int64_t from, std::int64_t to) {
    auto longer = [](const auto& a, const auto& b) { return a.second - a.first > b.second - b.first; };
    if (to <= from || (gaps.size() == kept_gaps && !longer(std::pair{from, to}, gaps.back()))) return;
    if (gaps.size() == kept_gaps) gaps.pop_back();
    gaps.insert(std::upper_bound(gaps.begin(), gaps.end(), std::pair{from, to}, longer), {from, to});
  }

  void write(const std::string& dir, bool force) {
    std::lock_guard lock(mutex);
    auto now = dde::samples::now_us();
    if ((received == written_received && holding == written_holding) ||
        (!force && now - last_write_us < 200000))
      return;
    written_received = received;
    written_holding = holding;
    last_write_us = now;
    dde::samples::write_stats(dir, "consumer-" + dde::samples::pid_text() + ".json",
                              {{"received", received},
                               {"holding", holding},
                               {"unique", unique},
                               {"duplicates", duplicates},
                               {"redelivered", redelivered},
                               {"sum", sum},
                               {"first_us", first_us},
                               {"last_us", last_us},
                               {"first_second", first_second},
                               {"max_gap_us", max_gap_us},
                               {"max_gap_from_us", max_gap_from_us},
                               {"max_gap_to_us", max_gap_to_us},
                               {"gaps", gaps},
                               {"latency_count", latencies.count()},
                               {"latency_p50_us", latencies.quantile(0.50)},
                               {"latency_p99_us", latencies.quantile(0.99)},
                               {"latency_max_us", latencies.quantile(1.0)}});
  }
};

tally& shared_tally() {
  static tally t;
  return t;
}

class consumer : public dde::worker {
 public:
  consumer()
      : stats_dir_(dde::samples::arg_or<std::string>(args(), "stats_dir", "")),
        work_ms_(dde::samples::arg_or<int>(args(), "work_ms", 0)),
        start_file_(dde::samples::arg_or<std::string>(args(), "start_file", "")) {
    auto log_dir = dde::samples::arg_or<std::string>(args(), "log_dir", "");
    auto& t = shared_tally();
    std::lock_guard lock(t.mutex);
    if (!log_dir.empty() && t.log_fd < 0) {
      auto path = log_dir + "/consumer-" + dde::samples::pid_text() + ".log";
      t.log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (t.log_fd < 0) throw std::runtime_error("cannot open " + path);
    }
  }

  // Without a stats_dir there is nothing to flush: no timer (a node may run thousands of these).
  void on_start() override {
    if (!stats_dir_.empty()) tick();
  }

  void on_receive(const dde::message& msg) override {
    std::int64_t seq = -1, sent_us = 0;
    if (msg.body().is_object()) {
      seq = msg.body().value("seq", std::int64_t(-1));
      sent_us = msg.body().value("sent_us", std::int64_t(0));
    }
    if (!start_file_.empty()) {
      auto& t = shared_tally();
      {
        std::lock_guard lock(t.mutex);
        ++t.holding;
      }
      t.write(stats_dir_, true);
      return hold(seq, msg.redelivered(), sent_us);
    }
    count(seq, msg.redelivered(), sent_us);
  }

  void before_kill() override { shared_tally().write(stats_dir_, true); }

 private:
  /// The first message, until start_file exists.
  void hold(std::int64_t seq, bool redelivered, std::int64_t sent_us) {
    auto after_delay = [this](auto delay, auto fn) { after(delay, std::move(fn)); };
    dde::samples::when_file_exists(start_file_, after_delay, [this, seq, redelivered, sent_us] {
      start_file_.clear();
      {
        auto& t = shared_tally();
        std::lock_guard lock(t.mutex);
        --t.holding;
      }
      count(seq, redelivered, sent_us);
    });
  }

  void count(std::int64_t seq, bool redelivered, std::int64_t sent_us) {
    shared_tally().record(seq, redelivered, sent_us);
    if (work_ms_ > 0) {
      after(std::chrono::milliseconds(work_ms_), [this] { done(); });
      return;
    }
    done();
  }

  // Stats are flushed every 200 ms while messages flow, and once more when they stop.
  void tick() {
    shared_tally().write(stats_dir_, false);
    after(std::chrono::milliseconds(200), [this] { tick(); });
  }

  std::string stats_dir_;
  int work_ms_;
  std::string start_file_;  ///< cleared once it existed
};

}  // namespace

DDE_WORKER(consumer)
