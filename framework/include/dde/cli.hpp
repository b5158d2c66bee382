#pragma once
/// \file
/// The command-line parser of every DDE binary: `--name value` / `--name=value` options with
/// defaults and help text, repeatable options, boolean flags, `--help` and `--version`.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dde {

/// DDE's version, as the CMake project states it (e.g. "0.1.0").
const char* version();

class cli {
 public:
  cli(std::string program, std::string summary);

  /// An option with a default value (empty default = optional with no value); `value_name` stands
  /// for its value in the usage (`--port PORT`).
  cli& option(std::string name, std::string default_value, std::string help, std::string value_name = "VALUE");
  /// An option that may be given several times.
  cli& repeated(std::string name, std::string help);
  /// A boolean flag (present = true).
  cli& flag(std::string name, std::string help);

  /// Parses; returns an error message (unknown option, missing value), or nullopt.
  std::optional<std::string> parse(int argc, char** argv);
  bool help_requested() const { return help_; }
  bool version_requested() const { return version_; }
  /// "<program> <version>", what `--version` prints.
  std::string version_line() const;
  std::string usage() const;

  const std::string& get(const std::string& name) const;
  /// The value as a number in [min, max]; throws std::invalid_argument with a clear message.
  long long get_int(const std::string& name, long long min, long long max) const;
  const std::vector<std::string>& all(const std::string& name) const;
  bool is_set(const std::string& name) const;  ///< given on the command line (or a flag present)
  /// A flag's value: on the command line (`--name`, `--name=true|false`) or from a config file.
  bool enabled(const std::string& name) const { return entries_.at(name).value == "true"; }
  bool has(const std::string& name) const { return entries_.count(name) > 0; }  ///< a known option
  /// Sets a value unless it was given on the command line (for --config files). A flag takes
  /// "true" or "false" (std::invalid_argument otherwise); std::out_of_range for an unknown name.
  void set_default(const std::string& name, const std::string& value);

 private:
  struct entry {
    std::string default_value;
    std::string help;
    std::string value_name = "VALUE";
    bool is_flag = false;
    bool is_repeated = false;
    std::string value;
    std::vector<std::string> values;
    bool given = false;
  };
  std::string program_;
  std::string summary_;
  std::vector<std::string> order_;
  std::map<std::string, entry> entries_;
  bool help_ = false;
  bool version_ = false;
};

}  // namespace dde
