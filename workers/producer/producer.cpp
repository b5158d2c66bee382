// producer: sends `count` numbered messages of `size` bytes to `to`, as fast as the host's window
// allows or at `rate` messages per second. A message's payload (the AMQP body) is JSON text of
// exactly `size` bytes, {"pad":"xx..","seq":N}, or the shortest such text when `size` is smaller
// (17 bytes plus the digits of N, plus the key field's member).
//   args: {"to": "sys/consumer", "count": 1000, "size": 64, "rate": 0, "start_seq": 0, "stats_dir": "",
//          "key_field": "", "keys": [], "start_file": "", "stamp": false}
// With key_field and keys, message seq also carries key_field: keys[seq % keys.size()] (for sub-pools).
// With stamp, each message carries "sent_us": the wall-clock µs at which it was sent (the `consumer`
// sample's latency figures).
// With start_file, a producer writes its stats with "ready": 1 when it starts, then waits until that
// file exists before it sends (so producers deployed one after another start together, as a raw
// client's threads do; its clock starts then).
#include <string_view>

#include "../common/sample_util.hpp"
#include "dde/worker.hpp"

namespace {

class producer : public dde::worker {
 public:
  producer()
      : to_(dde::samples::arg_or<std::string>(args(), "to", "")),
        count_(dde::samples::arg_or<std::int64_t>(args(), "count", 1000)),
        size_(dde::samples::arg_or<std::int64_t>(args(), "size", 64)),
        rate_(dde::samples::arg_or<double>(args(), "rate", 0)),
        next_(dde::samples::arg_or<std::int64_t>(args(), "start_seq", 0)),
        stats_dir_(dde::samples::arg_or<std::string>(args(), "stats_dir", "")),
        key_field_(dde::samples::arg_or<std::string>(args(), "key_field", "")),
        keys_(args().value("keys", nlohmann::json::array())),
        start_file_(dde::samples::arg_or<std::string>(args(), "start_file", "")),
        stamp_(dde::samples::arg_or<bool>(args(), "stamp", false)) {
    if (!key_field_.empty() && (!keys_.is_array() || keys_.empty()))
      throw std::invalid_argument("producer: args.key_field needs a non-empty args.keys array");
    if (to_.empty()) throw std::invalid_argument("producer needs args.to, the address to send to");
    end_ = next_ + count_;
  }

  void on_start() override {
    if (start_file_.empty()) return go();
    write_stats(true);  // "ready": 1, nothing sent yet
    auto after_delay = [this](auto delay, auto fn) { after(delay, std::move(fn)); };
    dde::samples::when_file_exists(start_file_, after_delay, [this] { go(); });
  }

  void on_receive(const dde::message&) override { done(); }

 private:
  void go() {
    started_us_ = dde::samples::now_us();
    produce();
  }

  void produce() {
    std::int64_t allowed = end_;
    if (rate_ > 0) {
      double elapsed = double(dde::samples::now_us() - started_us_) / 1e6;
      allowed = std::min(end_, first_seq() + std::int64_t(elapsed * rate_) + 1);
    }
    int sent_now = 0;
    while (next_ < allowed && sent_now < 256) {
      send(body_of(next_), to_);
      ++next_;
      ++sent_now;
    }
    write_stats(next_ == end_);
    if (next_ >= end_) {
      log_info("sent " + std::to_string(count_) + " messages to " + to_);
      return;
    }
    if (next_ < allowed)
      when_writable([this] { produce(); });
    else
      after(std::chrono::milliseconds(std::max(1, int(1000.0 / rate_))), [this] { produce(); });
  }

  std::int64_t first_seq() const { return end_ - count_; }

  /// Message `seq`: its pad makes the payload's JSON text `size_` bytes long.
  nlohmann::json body_of(std::int64_t seq) const {
    nlohmann::json body = {{"seq", seq}, {"pad", ""}};
    // {"pad":"","seq":N} is 17 bytes and the digits of N (the payload is the body's compact dump).
    std::size_t length = 17 + std::to_string(seq).size();
    if (!key_field_.empty()) {
      auto& key = keys_[std::size_t(seq) % keys_.size()];
      body[key_field_] = key;
      // ,"name":value
      length += 2 + nlohmann::json(key_field_).dump().size() + key.dump().size();
    }
    if (stamp_) {
      const auto sent_us = dde::samples::now_us();
      body["sent_us"] = sent_us;
      length += 2 + std::string_view(R"("sent_us")").size() + std::to_string(sent_us).size();
    }
    if (std::int64_t(length) < size_) body["pad"] = std::string(std::size_t(size_) - length, 'x');
    return body;
  }

  void write_stats(bool final_write) {
    auto now = dde::samples::now_us();
    if (!final_write && now - last_write_us_ < 250000) return;
    last_write_us_ = now;
    dde::samples::write_stats(stats_dir_,
                              "producer-" + dde::samples::pid_text() + "-" + worker_id() + ".json",
                              {{"sent", next_ - first_seq()},
                               {"first_us", started_us_},
                               {"last_us", now},
                               {"finished", next_ >= end_},
                               {"ready", 1}});
  }

  std::string to_;
  std::int64_t count_, size_;
  double rate_;
  std::int64_t next_, end_ = 0;
  std::string stats_dir_;
  std::string key_field_;
  nlohmann::json keys_;
  std::string start_file_;
  bool stamp_;
  std::int64_t started_us_ = 0, last_write_us_ = 0;
};

}  // namespace

DDE_WORKER(producer)
