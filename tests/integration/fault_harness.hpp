#pragma once
// The fault-injection suite's harness: a steady, sequence-numbered producer -> echo load
// in at-least-once mode on a real cluster (RabbitMQ, dde-mqs, dde-registry, one dde-activator),
// a fault injected mid-stream, then the accounting: every message produced must be consumed at
// least once; duplicates are counted; recovery is how long consumption took to resume.
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "cluster_fixture.hpp"

namespace dde::test {

/// One line of the table the suite prints.
struct fault_row {
  std::string fault;
  std::uint64_t produced = 0, consumed = 0, lost = 0, duplicated = 0;
  double recovery_ms =
      0;  ///< from the repair (or the injection, when nothing is repaired) to the next message consumed
  double longest_gap_ms = 0;  ///< the longest pause in consumption after the injection
  std::string note;
};

inline std::vector<fault_row>& fault_table() {
  static std::vector<fault_row> rows;
  return rows;
}

inline std::string format_row(const fault_row& r) {
  char line[512];
  std::snprintf(line, sizeof line, "| %-50s | %8llu | %8llu | %4llu | %10llu | %11.0f | %14.0f | %s",
                r.fault.c_str(), static_cast<unsigned long long>(r.produced),
                static_cast<unsigned long long>(r.consumed), static_cast<unsigned long long>(r.lost),
                static_cast<unsigned long long>(r.duplicated), r.recovery_ms, r.longest_gap_ms,
                r.note.c_str());
  return line;
}

/// Prints the table once every test ran.
class fault_table_printer : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("\n| %-50s | %8s | %8s | %4s | %10s | %11s | %14s | note\n", "fault", "produced", "consumed",
                "lost", "duplicated", "recovery ms", "longest gap ms");
    for (auto& r : fault_table()) std::printf("%s\n", format_row(r).c_str());
    std::fflush(stdout);
  }
};

inline std::int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// Resident memory of process `pid` in KiB (0 if it is gone).
inline std::size_t rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      std::size_t kib = 0;
      in >> kib;
      return kib;
    }
    in.ignore(4096, '\n');
  }
  return 0;
}

class Fault : public ::testing::Test {
 protected:
  static constexpr int messages = 3000;
  static constexpr int rate = 300;  // per second: about 10 s of load

  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    mqs = start_mqs(broker(), dir, 16);
    registry = start_registry(dir);
    node_ = start_activator(registry, dir, node_name);
    id = node_id(registry, node_name);
  }

  static rabbitmq_node& broker() { return shared_broker(); }

  /// Deploys the echo pool (through `consumer_mqs`, the MQS by default) and the producer feeding it.
  /// With `both`, the producer goes through `consumer_mqs` too.
  void start_load(const std::string& consumer_mqs = {}, nlohmann::json echo_args = nlohmann::json::object(),
                  int count = messages, int per_second = rate, bool both = false) {
    count_ = count;
    echo_args["log_dir"] = dir;
    auto echo = deploy_body(id, consumer_mqs.empty() ? mqs.url() : consumer_mqs, consumers, "echo", "echo_v1",
                            echo_args, {"localhost", "localhost"});
    auto r = rest("POST", registry.url() + "/registry/deploy", echo.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    auto producer = deploy_body(
        id, both ? consumer_mqs : mqs.url(), producers, "producer", "producer",
        {{"to", consumers + "/echo"}, {"count", count}, {"rate", per_second}, {"stats_dir", dir}});
    r = rest("POST", registry.url() + "/registry/deploy", producer.dump());
    ASSERT_EQ(r.status, 200) << r.body;
  }

  std::size_t consumed() {
    std::set<std::int64_t> seen;
    for (auto& l : read_echo_logs(dir)) seen.insert(l.seq);
    return seen.size();
  }
  /// Waits until the load is steady: a quarter of it consumed.
  void await_steady() {
    ASSERT_TRUE(wait_until([&] { return consumed() >= std::size_t(count_ / 4); }, long_wait))
        << "consumed " << consumed() << "\n"
        << mqs.proc->log();
  }
  /// The pid of the isolate system running `system` (from the registry), or -1.
  int host_pid(const std::string& system) {
    auto pools = pools_of(registry, id, system);
    return pools.empty() ? -1 : pools.at(0).value("pid", -1);
  }

  /// Waits for every message, records the row and checks that none was lost. `injected_us` and
  /// `repaired_us` are wall-clock times (wall_us()).
  void account(const std::string& fault, std::int64_t injected_us, std::int64_t repaired_us,
               std::string note = {}) {
    bool all = wait_until([&] { return consumed() >= std::size_t(count_); }, long_wait, 200ms);
    auto lines = read_echo_logs(dir);
    fault_row row;
    row.fault = fault;
    row.note = std::move(note);
    row.produced = std::uint64_t(sum_stats(dir, "producer-").value("sent", std::int64_t(0)));
    std::set<std::int64_t> seen;
    std::vector<std::int64_t> times;
    for (auto& l : lines) {
      seen.insert(l.seq);
      times.push_back(l.time_us);
    }
    std::sort(times.begin(), times.end());
    row.consumed = seen.size();
    row.duplicated = lines.size() - seen.size();
    for (std::int64_t s = 0; s < count_; ++s)
      if (!seen.count(s)) ++row.lost;
    auto after = std::upper_bound(times.begin(), times.end(), repaired_us);
    row.recovery_ms = after == times.end() ? -1 : double(*after - repaired_us) / 1000.0;
    auto from = std::lower_bound(times.begin(), times.end(), injected_us);
    std::int64_t prev = from == times.begin() ? injected_us : *(from - 1);
    for (auto it = from; it != times.end(); ++it) {
      row.longest_gap_ms = std::max(row.longest_gap_ms, double(*it - prev) / 1000.0);
      prev = *it;
    }
    fault_table().push_back(row);
    std::printf("%s\n", format_row(row).c_str());
    EXPECT_TRUE(all) << "consumed " << row.consumed << " of " << count_;
    EXPECT_EQ(row.lost, 0u);
    EXPECT_EQ(row.produced, std::uint64_t(count_));
  }

  std::filesystem::path dir;
  mqs_process mqs;
  registry_process registry;
  std::string node_name = "fault-" + std::to_string(::getpid());
  activator_process node_;
  std::string id;
  // Queues of their own per test: a redelivery left over from one test never reaches the next.
  std::string consumers = unique_test_system("faultc"), producers = consumers + "p";
  int count_ = messages;
};

}  // namespace dde::test
