#pragma once
// Results of the benchmark suite: one table (CSV file) per experiment, progress lines on stderr,
// and the Markdown summary.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace dde::bench {

/// One experiment's results: written as `<name>.csv` (header line, then one line per point).
struct table {
  table(std::string name_, std::string title_, std::vector<std::string> columns_)
      : name(std::move(name_)), title(std::move(title_)), columns(std::move(columns_)) {}
  std::string name;   ///< file name without .csv, e.g. "exp1_consumers"
  std::string title;  ///< what it reproduces, e.g. "Thesis fig. 5.1: consumption vs consumers"
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void write_csv(const std::filesystem::path& dir) const;
  /// The table as Markdown (numbers as they are in the CSV).
  std::string markdown() const;
};

/// A number for a table: rounded msg/s, or a ratio/ms with two decimals.
std::string num(double v, int decimals = 0);
/// ours/raw with two decimals, or "-" when raw is 0.
std::string ratio(double ours, double raw);

/// Progress on stderr: "[bench +MM:SS] exp1 (3/20) consumers=4 prefetch=64 at-most-once: ...".
class progress {
 public:
  progress() : start_(std::chrono::steady_clock::now()) {}
  void line(const std::string& text) const;
  double elapsed_s() const;

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace dde::bench
