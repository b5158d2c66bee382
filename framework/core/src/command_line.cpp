#include "dde/core/command_line.hpp"

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#ifndef DDE_VERSION
#error "DDE_VERSION must be defined (framework/CMakeLists.txt sets it from the project's version)"
#endif

namespace dde {
namespace {

/// Every program's help in one layout: usage line, summary, one line per option with its value's
/// name, its text, its default and its environment variable, then the footer.
class help_layout : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
    std::string out =
        "usage: " + app->get_name() + " [options]\n" + app->get_description() + "\n\noptions:\n";
    for (const CLI::Option* opt : app->get_options()) out += help_line(*opt);
    if (!app->get_footer().empty()) out += "\n" + app->get_footer() + "\n";
    return out;
  }
};

/// `--config FILE` as a JSON object: each key an option's name, each value a string, a whole number,
/// true/false or an array of those (for repeatable options).
class json_config : public CLI::Config {
 public:
  std::string to_config(const CLI::App* app, bool default_also, bool, std::string) const override {
    nlohmann::json out = nlohmann::json::object();
    for (const CLI::Option* opt : app->get_options()) {
      if (!opt->get_configurable() || opt->get_lnames().empty()) continue;
      auto values = opt->reduced_results();
      if (values.empty() && default_also && !opt->get_default_str().empty())
        values = {opt->get_default_str()};
      if (values.size() == 1) out[opt->get_lnames().front()] = values.front();
      if (values.size() > 1) out[opt->get_lnames().front()] = values;
    }
    return out.dump(2) + "\n";
  }

  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    auto json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded()) throw CLI::ConfigError("not valid JSON");
    if (!json.is_object()) throw CLI::ConfigError("must hold a JSON object");
    std::vector<CLI::ConfigItem> items;
    for (auto& [key, value] : json.items()) {
      CLI::ConfigItem item;
      item.name = key;
      if (value.is_array()) {
        for (auto& element : value) item.inputs.push_back(scalar(key, element));
      } else {
        item.inputs.push_back(scalar(key, value));
      }
      items.push_back(std::move(item));
    }
    return items;
  }

 private:
  static std::string scalar(const std::string& key, const nlohmann::json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_number_integer()) return value.dump();
    if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
    throw CLI::ConfigError("\"" + key +
                           "\" must be a string, a whole number, true/false or an array of those");
  }
};

}  // namespace

std::string command_line::reason(const CLI::ParseError& e) const {
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists the extras last first; the first one is what the user got wrong.
    auto extras = app_.remaining(false);
    if (extras.empty()) return what + " (see --help)";
    const auto& first = extras.front();
    return (first.rfind('-', 0) == 0 ? "unknown option " + first : "unexpected argument \"" + first + "\"") +
           " (see --help)";
  }
  if (dynamic_cast<const CLI::ConfigError*>(&e)) {
    const std::string unknown = "INI was not able to parse ";
    if (what.rfind(unknown, 0) == 0) what = "unknown key \"" + what.substr(unknown.size()) + "\"";
    const CLI::Option* file = app_.get_config_ptr();
    return "config file " +
           (file && !file->results().empty() ? file->results().front() + ": " : std::string()) + what;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.size() > 8 &&
      what.compare(what.size() - 8, 8, " missing") == 0)
    return what.substr(0, what.find(':')) + " needs a value";
  return what;
}

const char* version() { return DDE_VERSION; }

std::string help_line(const CLI::Option& opt) {
  std::string left = "  " + opt.get_name(false, true);
  if (opt.get_type_size() != 0) {
    // CLI11 appends its validators' descriptions ("UINT:INT in [0 - 65535]"): the value's name is
    // enough here, the range is in the error a wrong value gets.
    std::string type = opt.get_type_name();
    left += " " + type.substr(0, type.find(':'));
  }
  if (left.size() < 28) left.resize(28, ' ');
  std::string text = left + " " + opt.get_description();
  if (opt.get_items_expected_max() > 1) text += " (repeatable)";
  // A repeatable option's default is an empty list, which CLI11 shows as "[]".
  if (!opt.get_default_str().empty() && opt.get_default_str() != "[]")
    text += " (default: " + opt.get_default_str() + ")";
  if (!opt.get_envname().empty()) text += " [$" + opt.get_envname() + "]";
  return text + "\n";
}

command_line::command_line(std::string program, std::string summary)
    : program_(std::move(program)), app_(std::move(summary), program_) {
  app_.formatter(std::make_shared<help_layout>());
  app_.set_help_flag("-h,--help", "print this help")->configurable(false);
  app_.add_flag("--version", version_requested_, "print the version")->configurable(false);
  app_.allow_config_extras(CLI::config_extras_mode::error);
  // Options with values are `--name VALUE` or `--name=VALUE`, one value per occurrence.
  app_.allow_windows_style_options(false);
  // A value given twice counts the last time, as scripts that add to a default command line expect.
  app_.option_defaults()->always_capture_default()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

void command_line::accept_config_file(const std::string& example) {
  app_.config_formatter(std::make_shared<json_config>());
  app_.set_config("--config", "",
                  "JSON object with the same keys (e.g. " + example + "); the command line overrides it")
      ->type_name("FILE");
}

command_line::outcome command_line::parse(int argc, const char* const* argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    return {outcome::help, usage()};
  } catch (const CLI::ParseError& e) {
    if (version_requested_) return {outcome::version, version_line()};
    return {outcome::error, reason(e)};
  }
  if (version_requested_) return {outcome::version, version_line()};
  return {};
}

std::optional<int> command_line::parse_or_exit(int argc, const char* const* argv) {
  auto result = parse(argc, argv);
  switch (result.what) {
    case outcome::run: return std::nullopt;
    case outcome::help: std::cout << result.text; return 0;
    case outcome::version: std::cout << result.text << "\n"; return 0;
    case outcome::error:
      std::cerr << program_ << ": " << result.text << "\nTry '" << program_ << " --help'.\n";
      return 2;
  }
  return 2;
}

CLI::Option* add_log_level(CLI::App& app, std::string& level) {
  return app.add_option("--log-level", level, "trace, debug, info, warn, error or off")
      ->type_name("LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
}

}  // namespace dde
