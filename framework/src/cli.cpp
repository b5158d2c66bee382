#include "dde/cli.hpp"

#include <charconv>
#include <stdexcept>

#ifndef DDE_VERSION
#error "DDE_VERSION must be defined (framework/CMakeLists.txt sets it from the project's version)"
#endif

namespace dde {

const char* version() { return DDE_VERSION; }

std::string cli::version_line() const { return program_ + " " + version(); }

cli::cli(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

cli& cli::option(std::string name, std::string default_value, std::string help, std::string value_name) {
  order_.push_back(name);
  entries_[name] = {default_value, std::move(help), std::move(value_name), false, false, default_value, {}, false};
  return *this;
}

cli& cli::repeated(std::string name, std::string help) {
  order_.push_back(name);
  entries_[name] = {{}, std::move(help), "VALUE", false, true, {}, {}, false};
  return *this;
}

cli& cli::flag(std::string name, std::string help) {
  order_.push_back(name);
  entries_[name] = {"false", std::move(help), "", true, false, "false", {}, false};
  return *this;
}

std::optional<std::string> cli::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      continue;
    }
    if (arg == "--version") {
      version_ = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) return "unexpected argument \"" + arg + "\" (options start with --)";
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto it = entries_.find(name);
    if (it == entries_.end()) return "unknown option --" + name + " (see --help)";
    auto& e = it->second;
    e.given = true;
    if (e.is_flag) {
      if (value && *value != "true" && *value != "false")
        return "--" + name + " is a flag: give it alone, or as --" + name + "=true or --" + name + "=false";
      e.value = value.value_or("true");
      continue;
    }
    if (!value) {
      if (i + 1 >= argc) return "--" + name + " needs a value";
      value = argv[++i];
    }
    if (e.is_repeated)
      e.values.push_back(*value);
    else
      e.value = *value;
  }
  return std::nullopt;
}

std::string cli::usage() const {
  std::string out = "usage: " + program_ + " [options]\n" + summary_ + "\n\noptions:\n";
  for (auto& name : order_) {
    auto& e = entries_.at(name);
    std::string left = "  --" + name + (e.is_flag ? "" : " " + e.value_name);
    if (left.size() < 28) left.resize(28, ' ');
    out += left + " " + e.help;
    if (e.is_repeated)
      out += " (repeatable)";
    else if (!e.is_flag && !e.default_value.empty())
      out += " (default: " + e.default_value + ")";
    out += "\n";
  }
  out += "  --help                       print this help\n";
  out += "  --version                    print the version\n";
  return out;
}

const std::string& cli::get(const std::string& name) const { return entries_.at(name).value; }

long long cli::get_int(const std::string& name, long long min, long long max) const {
  const std::string& text = get(name);
  long long v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min || v > max)
    throw std::invalid_argument("--" + name + " must be an integer from " + std::to_string(min) + " to " +
                                std::to_string(max) + ", got \"" + text + "\"");
  return v;
}

const std::vector<std::string>& cli::all(const std::string& name) const { return entries_.at(name).values; }

bool cli::is_set(const std::string& name) const { return entries_.at(name).given; }

void cli::set_default(const std::string& name, const std::string& value) {
  auto& e = entries_.at(name);
  if (e.is_flag && value != "true" && value != "false")
    throw std::invalid_argument("\"" + name + "\" is a flag: true or false, not \"" + value + "\"");
  if (!e.given) e.value = value;
}

}  // namespace dde
