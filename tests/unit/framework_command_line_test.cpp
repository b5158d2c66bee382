// The command line every DDE binary shares (dde/core/command_line.hpp): typed options, the last of a value
// given twice, repeatable options, a JSON --config file, environment variables, and which wins.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "dde/core/command_line.hpp"

namespace dde {
namespace {

struct settings {
  int port = 8000;
  std::vector<std::string> allow;
  bool verbose = false;
  std::string secret_file;
  std::chrono::milliseconds timeout{1500};
};

class CommandLine : public ::testing::Test {
 protected:
  void TearDown() override {
    std::filesystem::remove(path_);
    ::unsetenv("DDE_TEST_SECRET_FILE");
  }

  command_line::outcome parse(std::vector<std::string> args) {
    line_ = std::make_unique<command_line>("dde-test", "A program for the test.");
    s_ = settings{};
    auto& app = line_->app();
    app.add_option("--port", s_.port, "port")->type_name("PORT")->check(CLI::Range(0, 65535));
    app.add_option("--allow", s_.allow, "a prefix")->type_name("PREFIX")->allow_extra_args(false);
    app.add_flag("--verbose", s_.verbose, "say more");
    app.add_option("--secret-file", s_.secret_file, "the secret")
        ->type_name("FILE")
        ->envname("DDE_TEST_SECRET_FILE");
    add_duration(app, "--timeout-ms", s_.timeout, 1, 60000, "give up after this long")->type_name("MS");
    line_->accept_config_file("{\"port\": 1}");
    std::vector<const char*> argv{"dde-test"};
    for (auto& a : args) argv.push_back(a.c_str());
    return line_->parse(int(argv.size()), argv.data());
  }

  void write_config(const std::string& json) { std::ofstream(path_) << json; }

  std::unique_ptr<command_line> line_;
  settings s_;
  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("command-line-" + std::to_string(::getpid()) + ".json");
};

TEST_F(CommandLine, ValuesAreTypedCheckedAndTheLastOfTwoCounts) {
  ASSERT_EQ(parse({"--port", "9", "--port=10", "--timeout-ms", "250", "--verbose"}).what,
            command_line::outcome::run);
  EXPECT_EQ(s_.port, 10);
  EXPECT_EQ(s_.timeout.count(), 250);
  EXPECT_TRUE(s_.verbose);
  ASSERT_EQ(parse({"--verbose=false"}).what, command_line::outcome::run);
  EXPECT_FALSE(s_.verbose);
  EXPECT_EQ(s_.port, 8000) << "the default when not given";
  EXPECT_EQ(parse({"--port", "70000"}).text, "--port: Value 70000 not in range 0 to 65535");
  EXPECT_EQ(parse({"--timeout-ms", "0"}).text, "--timeout-ms: Value 0 not in range 1 to 60000");
  EXPECT_EQ(parse({"--port"}).text, "--port needs a value");
  EXPECT_EQ(parse({"--colour", "red"}).text, "unknown option --colour (see --help)");
  EXPECT_EQ(parse({"red"}).text, "unexpected argument \"red\" (see --help)");
  EXPECT_EQ(parse({"--port", "1"}).what, command_line::outcome::run);
}

TEST_F(CommandLine, ARepeatableOptionKeepsEveryValueInOrder) {
  ASSERT_EQ(parse({"--allow", "/a", "--allow=/b", "--allow", "/c"}).what, command_line::outcome::run);
  EXPECT_EQ(s_.allow, (std::vector<std::string>{"/a", "/b", "/c"}));
}

TEST_F(CommandLine, TheCommandLineOverridesTheConfigFileWhichOverridesTheEnvironment) {
  ::setenv("DDE_TEST_SECRET_FILE", "/from/env", 1);
  ASSERT_EQ(parse({}).what, command_line::outcome::run);
  EXPECT_EQ(s_.secret_file, "/from/env");
  write_config(
      R"({"port": 4000, "allow": ["/x", "/y"], "verbose": true, "secret-file": "/from/file", "timeout-ms": 9})");
  ASSERT_EQ(parse({"--config", path_.string()}).what, command_line::outcome::run);
  EXPECT_EQ(s_.port, 4000);
  EXPECT_EQ(s_.allow, (std::vector<std::string>{"/x", "/y"}));
  EXPECT_TRUE(s_.verbose);
  EXPECT_EQ(s_.secret_file, "/from/file");
  EXPECT_EQ(s_.timeout.count(), 9);
  ASSERT_EQ(parse({"--config", path_.string(), "--port", "5000", "--secret-file", "/from/argv"}).what,
            command_line::outcome::run);
  EXPECT_EQ(s_.port, 5000);
  EXPECT_EQ(s_.secret_file, "/from/argv");
}

TEST_F(CommandLine, ABadConfigFileIsNamedWithWhatIsWrongInIt) {
  write_config(R"({"colour": "red"})");
  EXPECT_EQ(parse({"--config", path_.string()}).text,
            "config file " + path_.string() + ": unknown key \"colour\"");
  write_config("[1, 2]");
  EXPECT_EQ(parse({"--config", path_.string()}).text,
            "config file " + path_.string() + ": must hold a JSON object");
  write_config(R"({"port": 1.5})");
  EXPECT_EQ(parse({"--config", path_.string()}).text,
            "config file " + path_.string() +
                ": \"port\" must be a string, a whole number, true/false or an array of those");
  write_config(R"({"help": true})");
  EXPECT_NE(parse({"--config", path_.string()}).text.find("not allowed in a configuration file"),
            std::string::npos);
  std::filesystem::remove(path_);
  auto missing = parse({"--config", path_.string()});
  EXPECT_EQ(missing.what, command_line::outcome::error);
  EXPECT_NE(missing.text.find(path_.string()), std::string::npos);
}

TEST_F(CommandLine, HelpAndVersionAreAnsweredInOneLayout) {
  auto help = parse({"--help"});
  ASSERT_EQ(help.what, command_line::outcome::help);
  EXPECT_EQ(help.text.rfind("usage: dde-test [options]\nA program for the test.\n\noptions:\n", 0), 0u)
      << help.text;
  EXPECT_NE(help.text.find("  --port PORT                port (default: 8000)\n"), std::string::npos)
      << help.text;
  EXPECT_NE(help.text.find("  --allow PREFIX             a prefix (repeatable)\n"), std::string::npos);
  EXPECT_NE(help.text.find("  --secret-file FILE         the secret [$DDE_TEST_SECRET_FILE]\n"),
            std::string::npos);
  EXPECT_NE(help.text.find("  --timeout-ms MS            give up after this long (default: 1500)\n"),
            std::string::npos);
  EXPECT_NE(help.text.find("  --verbose                  say more\n"), std::string::npos);
  auto version = parse({"--version"});
  ASSERT_EQ(version.what, command_line::outcome::version);
  EXPECT_EQ(version.text, std::string("dde-test ") + dde::version());
}

}  // namespace
}  // namespace dde
