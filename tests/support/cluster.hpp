#pragma once
// A local DDE cluster for integration tests: dde-mqs and dde-isolate-system child processes
// against a real broker, and readers for the sample workers' stats and sequence logs.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dde_test.hpp"

namespace dde::test {

/// A running dde-mqs on a free port.
struct mqs_process {
  std::uint16_t port = 0;
  std::unique_ptr<child_process> proc;
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(port) + "/mqs"; }
};

/// Starts dde-mqs against `broker` and waits until it listens.
mqs_process start_mqs(rabbitmq_node& broker, const std::filesystem::path& dir, int prefetch = 64,
                      std::uint16_t port = 0);

/// Starts a dde-isolate-system named `system` with `pools` (pool spec bodies).
std::unique_ptr<child_process> start_host(const std::string& system, const std::string& mqs_url,
                                          const std::vector<nlohmann::json>& pools,
                                          const std::filesystem::path& log_file);

/// A pool spec for a sample worker plugin.
nlohmann::json pool(const std::string& system, const std::string& isolate, const std::string& plugin,
                    nlohmann::json args, int workers = 1, const std::string& mode = "at-least-once");

/// Sum of the numeric fields of every `prefix*.json` stats file in `dir`.
nlohmann::json sum_stats(const std::filesystem::path& dir, const std::string& prefix);

/// Every JSON stats file `prefix*.json` in `dir`.
std::vector<nlohmann::json> all_stats(const std::filesystem::path& dir, const std::string& prefix);

/// What the consumers' sequence logs in `dir` hold.
struct seq_report {
  std::uint64_t lines = 0;
  std::set<std::int64_t> unique;
  std::uint64_t duplicates() const { return lines - unique.size(); }
  /// Sequence numbers in [0, n) that never arrived.
  std::vector<std::int64_t> missing(std::int64_t n) const;
};
seq_report read_seq_logs(const std::filesystem::path& dir);

}  // namespace dde::test
