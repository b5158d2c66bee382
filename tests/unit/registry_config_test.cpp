// dde-registry's command line and --config file: flags in a config file count (a security flag
// silently ignored would leave a registry open that its operator believes closed).
#include "dde/registry/registry_config.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace dde::registry {
namespace {

class RegistryConfig : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }
  /// parse_command_line of "dde-registry --config <file holding `json`>" and then `extra`.
  command_line_result parse(const std::string& json, std::vector<std::string> extra = {}) {
    std::ofstream(path_) << json;
    std::vector<std::string> args{"dde-registry", "--config", path_.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    return parse_command_line(int(argv.size()), argv.data());
  }
  std::filesystem::path path_ =
      std::filesystem::temp_directory_path() / ("registry-config-" + std::to_string(::getpid()) + ".json");
};

TEST_F(RegistryConfig, AFlagInTheConfigFileCountsAsOnTheCommandLine) {
  // Without a certificate, verifying clients is refused: proof that the file's flag was read.
  EXPECT_EQ(parse(R"({"tls-verify-client": true})").error, "--tls-verify-client needs --tls-cert");
  EXPECT_EQ(parse(R"({"tls-verify-client": "true"})").error, "--tls-verify-client needs --tls-cert");
  EXPECT_EQ(parse(R"({"tls-verify-client": false})").error, "");
  EXPECT_EQ(parse(R"({"tls-verify-client": true})", {"--tls-verify-client=false"}).error, "")
      << "the command line overrides the file";
  EXPECT_EQ(parse("{}", {"--tls-verify-client=false"}).error, "") << "=false is off";
  EXPECT_EQ(parse("{}", {"--tls-verify-client"}).error, "--tls-verify-client needs --tls-cert");
}

TEST_F(RegistryConfig, BadValuesInTheConfigFileAreNamed) {
  EXPECT_EQ(parse(R"({"tls-verify-client": "maybe"})").error,
            "Could not convert: --tls-verify-client = maybe");
  EXPECT_EQ(parse(R"({"port": {"n": 1}})").error,
            "config file " + path_.string() +
                ": \"port\" must be a string, a whole number, true/false or an array of those");
  EXPECT_EQ(parse(R"({"port": [1, 2]})").cfg.port, 2) << "the last, as on the command line";
  EXPECT_EQ(parse(R"({"port": 70000})").error, "--port: Value 70000 not in range 0 to 65535");
  EXPECT_EQ(parse(R"({"no-such-key": 1})").error,
            "config file " + path_.string() + ": unknown key \"no-such-key\"");
  auto ok = parse(R"({"port": 4321, "heartbeat-ms": "0"})");
  EXPECT_EQ(ok.error, "");
  EXPECT_EQ(ok.cfg.port, 4321);
  EXPECT_EQ(ok.cfg.heartbeat.count(), 0);
}

TEST_F(RegistryConfig, OneStoreRemembersTheClusterAndARegistryNamesItselfByItsAddress) {
  EXPECT_EQ(parse("{}", {"--state-file", "/tmp/r.db", "--state-url", "postgresql://dde@db/dde"}).error,
            "--state-file and --state-url exclude each other: one store remembers the cluster");
  auto pair = parse(R"({"state-url": "postgresql://dde@db/dde", "port": 8001, "listen": "10.0.0.5"})");
  ASSERT_EQ(pair.error, "");
  EXPECT_EQ(pair.cfg.state_url, "postgresql://dde@db/dde");
  EXPECT_EQ(pair.cfg.advertise, "http://10.0.0.5:8001");
  EXPECT_EQ(pair.cfg.standby_poll.count(), 1000);
  EXPECT_EQ(parse("{}", {"--advertise", "https://r1.example:8000"}).cfg.advertise, "https://r1.example:8000");
  EXPECT_EQ(parse("{}", {"--listen", "::1", "--port", "9"}).cfg.advertise, "http://[::1]:9");
  EXPECT_NE(parse("{}", {"--standby-poll-ms", "10"}).error, "") << "below the 50 ms floor";
}

}  // namespace
}  // namespace dde::registry
