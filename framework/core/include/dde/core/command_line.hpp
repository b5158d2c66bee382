#pragma once
/// \file
/// The command line of every DDE binary: CLI11, with what all of them share. Options are defined once,
/// typed and bound to the settings they fill (`app().add_option("--port", cfg.port, ...)`), with their
/// ranges, environment variables and defaults; the same definitions read a JSON `--config FILE`. The
/// help keeps one layout for every program (`--name VALUE  text (default: ...)`), `--version` prints
/// "<program> <version>", and a bad command line is exit status 2 with the reason on stderr.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace dde {

/// DDE's version, as the CMake project states it (e.g. "0.1.0").
const char* version();

class command_line {
 public:
  command_line(std::string program, std::string summary);

  CLI::App& app() { return app_; }
  const CLI::App& app() const { return app_; }
  const std::string& program() const { return program_; }

  /// `--config FILE`: a JSON object keyed by option names without `--` (`{"port": 8000}`); an option
  /// given on the command line overrides the file, and the file overrides environment variables.
  /// Unknown keys and keys that are no option's are errors. `example` shows one in the help.
  void accept_config_file(const std::string& example);

  /// What a parse found.
  struct outcome {
    enum kind { run, help, version, error } what = run;
    std::string text;  ///< help: the usage; version: the version line; error: the reason
  };
  /// Parses `argv`; prints nothing.
  outcome parse(int argc, const char* const* argv);
  /// Parses `argv`; prints the help or version (stdout, exit 0) or the error with a hint (stderr,
  /// exit 2). Returns the exit code when the program should end now, nullopt to go on.
  std::optional<int> parse_or_exit(int argc, const char* const* argv);

  std::string usage() const { return app_.help(); }
  std::string version_line() const { return program_ + " " + version(); }

 private:
  /// CLI11's error, said as DDE's programs say it where CLI11's words are unclear.
  std::string reason(const CLI::ParseError& e) const;

  std::string program_;
  CLI::App app_;
  bool version_requested_ = false;
};

/// One option's line in the help layout every program shares: `  --name VALUE  text (default: ...)`.
std::string help_line(const CLI::Option& option);

/// The log levels `--log-level` takes.
CLI::Option* add_log_level(CLI::App& app, std::string& level);

/// An option of whole milliseconds (or microseconds) in [min, max] that fills a duration.
template <class Duration>
CLI::Option* add_duration(CLI::App& app, const std::string& name, Duration& target, std::int64_t min,
                          std::int64_t max, const std::string& help) {
  return app
      .add_option_function<std::int64_t>(
          name, [&target](std::int64_t count) { target = Duration(count); }, help)
      ->default_str(std::to_string(target.count()))
      ->check(CLI::Range(min, max));
}

}  // namespace dde
