// The security helpers without sockets: secret comparison and files, bearer tokens, the exposure
// warning, the cluster-secret guard, plugin sha256 checks, the plugin allow list, and the
// registry's role rules.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dde/net/auth.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/runtime/plugin_allow.hpp"
#include "dde/runtime/plugin_loader.hpp"

namespace {

namespace fs = std::filesystem;
using namespace dde;

std::string plugin(const std::string& name) { return std::string(DDE_WORKER_DIR) + "/lib" + name + ".so"; }

/// A fresh directory `name` under this run's scratch root, which goes when the program ends.
fs::path temp_dir(const std::string& name) {
  static const struct scratch {
    fs::path root = fs::temp_directory_path() / ("dde-security-test-" + std::to_string(::getpid()));
    ~scratch() {
      std::error_code ignored;
      fs::remove_all(root, ignored);
    }
  } scratch;
  auto d = scratch.root / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

/// A logger writing into `out`.
std::shared_ptr<spdlog::logger> capture(std::ostringstream& out) {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
}

TEST(Secrets, CompareEqualOnlyWhenEveryByteAndTheLengthMatch) {
  EXPECT_TRUE(net::constant_time_equal("s3cret", "s3cret"));
  EXPECT_FALSE(net::constant_time_equal("s3cret", "s3creT"));
  EXPECT_FALSE(net::constant_time_equal("s3cret", "s3cret!"));
  EXPECT_FALSE(net::constant_time_equal("", "x"));
  EXPECT_TRUE(net::constant_time_equal("", ""));
}

TEST(Secrets, AreReadFromTheFirstLineOfAFileTrimmedAndAnEmptyFileIsAnError) {
  auto d = temp_dir("files");
  std::ofstream(d / "token") << "  abc123 \n second line\n";
  EXPECT_EQ(net::read_secret_file((d / "token").string()), "abc123");
  std::ofstream(d / "empty") << "\n";
  EXPECT_THROW(net::read_secret_file((d / "empty").string()), std::invalid_argument);
  try {
    net::read_secret_file((d / "missing").string());
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read secret file"), std::string::npos);
  }
  ::setenv("DDE_TEST_SECRET", "from-env", 1);
  EXPECT_EQ(net::load_secret("", "DDE_TEST_SECRET"), "from-env");
  EXPECT_EQ(net::load_secret((d / "token").string(), "DDE_TEST_SECRET"), "abc123") << "the file wins";
  ::unsetenv("DDE_TEST_SECRET");
  EXPECT_EQ(net::load_secret("", "DDE_TEST_SECRET"), "");
}

TEST(BearerToken, ComesFromTheAuthorizationHeaderOrOnlyWhenAllowedFromTheQuery) {
  net::http_request req;
  req.target = "/dashboard/live?x=1&token=a%2Fb";
  EXPECT_EQ(net::bearer_token(req), "");
  EXPECT_EQ(net::bearer_token(req, true), "a/b");
  req.headers["authorization"] = "bearer  tok ";
  EXPECT_EQ(net::bearer_token(req), "tok");
  req.headers["authorization"] = "Basic dXNlcjpwYXNz";
  EXPECT_EQ(net::bearer_token(req), "");
}

TEST(Exposure, WarnsLoudlyBeyondLoopbackNamingWhatIsMissingAndNeverOnLoopback) {
  std::ostringstream out;
  auto log = capture(out);
  EXPECT_FALSE(net::warn_if_exposed(*log, {"dde-registry", "127.0.0.1", false, false, false}));
  EXPECT_FALSE(net::warn_if_exposed(*log, {"dde-registry", "::1", false, false, false}));
  EXPECT_TRUE(out.str().empty());
  EXPECT_TRUE(net::warn_if_exposed(*log, {"dde-registry", "0.0.0.0", false, false, true}));
  EXPECT_NE(out.str().find("SECURITY WARNING: dde-registry listens on 0.0.0.0"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("without TLS, API tokens"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[warning]"), std::string::npos) << out.str();
  EXPECT_FALSE(net::warn_if_exposed(*log, {"dde-mqs", "10.0.0.1", true, true, true}));
}

TEST(ClusterSecretGuard, RefusesUpgradesWithoutTheSecretLogsThePeerAndLetsHttpThrough) {
  std::ostringstream out;
  auto guard = net::cluster_secret_guard("s3cret", capture(out));
  net::http_request req;
  req.method = "GET";
  req.target = "/mqs";
  req.remote = "10.1.2.3:4567";
  auto refused = guard(req, true);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
  EXPECT_NE(out.str().find("refused a WebSocket link from 10.1.2.3:4567 to /mqs: no cluster secret"),
            std::string::npos)
      << out.str();
  EXPECT_FALSE(guard(req, false)) << "plain HTTP (/health, /metrics) is not a link";
  req.headers["x-dde-cluster-secret"] = "wrong";
  EXPECT_TRUE(guard(req, true));
  req.headers["x-dde-cluster-secret"] = "s3cret";
  EXPECT_FALSE(guard(req, true));
  EXPECT_EQ(out.str().find("s3cret"), std::string::npos);
  EXPECT_FALSE(net::cluster_secret_guard("", capture(out))(req, true)) << "no secret: open";
}

TEST(PluginSha256, AMatchingHashLoadsAndAnotherIsRefusedBeforeLoading) {
  auto sha = runtime::file_sha256(plugin("supplier"));
  ASSERT_EQ(sha.size(), 64u);
  EXPECT_TRUE(runtime::worker_plugin::load(plugin("supplier"), sha));
  auto wrong = runtime::worker_plugin::load(plugin("supplier"), std::string(64, 'a'));
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().find("has SHA-256 " + sha + ", not the " + std::string(64, 'a')), std::string::npos)
      << wrong.error();
  EXPECT_EQ(wrong.code<runtime::plugin_failure>(), runtime::plugin_failure::checksum);
}

TEST(PluginSha256, TheDeployFieldMustBe64HexCharactersAndIsKeptLowerCase) {
  nlohmann::json body = {{"isolateSystemName", "s"}, {"isolateName", "i"}, {"uri", "x.so"}};
  body["sha256"] = std::string(64, 'A');
  auto ok = dde::parse_pool_spec(body);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok.value().sha256, std::string(64, 'a'));
  EXPECT_EQ(dde::to_json(ok.value())["sha256"], std::string(64, 'a'));
  for (auto bad : {nlohmann::json("abc"), nlohmann::json(std::string(63, 'a') + "g"), nlohmann::json(42)}) {
    body["sha256"] = bad;
    auto r = dde::parse_pool_spec(body);
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().find("field \"sha256\" must be the plugin's SHA-256 as 64 hexadecimal characters"),
              std::string::npos)
        << r.error();
  }
}

TEST(PluginAllow, PathsMustLieInsideAListedDirectoryAfterCanonicalisation) {
  auto d = temp_dir("allow");
  fs::create_directories(d / "plugins");
  fs::create_directories(d / "plugins-evil");
  std::ofstream(d / "plugins" / "a.so") << "x";
  std::ofstream(d / "plugins-evil" / "a.so") << "x";
  fs::create_symlink(d / "plugins-evil" / "a.so", d / "plugins" / "link.so");
  std::vector<std::string> allow = {(d / "plugins").string()};
  EXPECT_EQ(runtime::check_plugin_allowed((d / "plugins" / "a.so").string(), allow), "");
  EXPECT_EQ(runtime::check_plugin_allowed("file://" + (d / "plugins" / "a.so").string(), allow), "");
  EXPECT_EQ(runtime::check_plugin_allowed((d / "plugins" / "not-yet.so").string(), allow), "");
  for (auto bad : {d / "plugins-evil" / "a.so", d / "plugins" / ".." / "plugins-evil" / "a.so",
                   d / "plugins" / "link.so"}) {
    auto why = runtime::check_plugin_allowed(bad.string(), allow);
    EXPECT_NE(why.find("outside the allowed plugin locations (--plugin-allow " + allow[0] + ")"),
              std::string::npos)
        << bad << ": " << why;
  }
  EXPECT_NE(runtime::check_plugin_allowed("https://h/plugins/a.so", allow), "")
      << "a directory allows no URL";
  EXPECT_EQ(runtime::check_plugin_allowed((d / "anything.so").string(), {}), "") << "no list: anywhere";
}

TEST(PluginAllow, UrlsMustStartWithAListedPrefixAtASlashAndNeverClimb) {
  std::vector<std::string> allow = {"https://plugins.example/dde", "http://10.0.0.5:8080/so/"};
  EXPECT_EQ(runtime::check_plugin_allowed("https://plugins.example/dde/echo.so", allow), "");
  EXPECT_EQ(runtime::check_plugin_allowed("http://10.0.0.5:8080/so/echo.so", allow), "");
  for (auto bad : {"https://plugins.example/dde-evil/echo.so", "https://plugins.example/dde/../x.so",
                   "https://plugins.example/dde/%2e%2e/x.so", "http://10.0.0.5:8081/so/echo.so",
                   "https://evil.example/dde/echo.so"})
    EXPECT_NE(runtime::check_plugin_allowed(bad, allow), "") << bad;
  EXPECT_NE(runtime::check_plugin_allowed("/tmp/a.so", allow), "") << "a URL prefix allows no path";
}

}  // namespace
