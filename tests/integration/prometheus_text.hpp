#pragma once
// A strict reader of the Prometheus text exposition format (0.0.4) for the /metrics tests: every
// line must be a well-formed comment, HELP, TYPE or sample; each family's TYPE comes before its
// samples, which are contiguous; no series appears twice. Anything else is an error naming the line.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dde::test {

struct prom_sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct prom_text {
  std::map<std::string, std::string> types;  ///< family -> counter, gauge, ...
  std::vector<prom_sample> samples;
  std::string error;  ///< empty when the whole text is valid
  bool ok() const { return error.empty(); }

  /// The value of series `name` whose labels include `labels`; nullopt if none, or several, match.
  std::optional<double> value(const std::string& name,
                              const std::map<std::string, std::string>& labels = {}) const;
};

prom_text parse_prometheus(const std::string& text);

/// What `promtool check metrics` says about `text` (lint problems such as a missing HELP or a counter
/// not ending in _total, and parse errors), written to `file` first: "" when nothing. Says so when
/// promtool is not installed (deploy/install-deps.sh installs the Debian package prometheus).
std::string promtool_problems(const std::string& text, const std::filesystem::path& file);

}  // namespace dde::test
