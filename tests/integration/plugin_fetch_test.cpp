// Downloading worker plugins over http:// and https://: conditional requests, precise
// errors, certificate verification, and a cancel that ends a hung download. A real HTTP server (dde's
// own) and a real TLS server (`openssl s_server`) on 127.0.0.1; no broker.
#include <gtest/gtest.h>

#include <thread>

#include "dde/runtime/plugin_loader.hpp"
#include "dde_test.hpp"
#include "plugin_fetcher.hpp"
#include "plugin_server.hpp"
#include "tls_server.hpp"

namespace dde::test {
namespace {

using kind = host::fetch_result::kind;

class PluginFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    options.dir = dir / "cache";
    options.timeout = 30s;
  }
  host::fetch_result fetch(const std::string& uri, const host::fetch_validators& known = {}) {
    return host::fetch_plugin(uri, "sys.pool", known, options);
  }
  std::filesystem::path dir;
  host::fetch_options options;
};

TEST_F(PluginFetch, DownloadsAPluginAndAsksWithItsETagAfterwards) {
  plugin_server server(worker_path("echo_v1"));
  auto first = fetch(server.url());
  ASSERT_EQ(first.what, kind::fetched) << first.error;
  EXPECT_EQ(first.md5, runtime::file_md5(worker_path("echo_v1")));
  EXPECT_EQ(runtime::file_md5(first.file), first.md5);
  EXPECT_EQ(first.file.parent_path(), options.dir);
  ASSERT_FALSE(first.validators.etag.empty());
  EXPECT_TRUE(runtime::worker_plugin::load(first.file)) << "the download loads as a plugin";

  auto again = fetch(server.url(), first.validators);
  EXPECT_EQ(again.what, kind::not_modified) << again.error;
  EXPECT_EQ(server.not_modified(), 1u);
  EXPECT_EQ(server.downloads(), 1u);

  server.serve(worker_path("echo_v2"));
  auto changed = fetch(server.url(), first.validators);
  ASSERT_EQ(changed.what, kind::fetched) << changed.error;
  EXPECT_EQ(changed.md5, runtime::file_md5(worker_path("echo_v2")));
  EXPECT_NE(changed.file, first.file) << "each version gets its own file";
  EXPECT_NE(changed.validators.etag, first.validators.etag);
}

TEST_F(PluginFetch, UsesIfModifiedSinceWhenTheServerGivesNoETag) {
  plugin_server server(worker_path("echo_v1"), {false, "/libplugin.so"});
  auto first = fetch(server.url());
  ASSERT_EQ(first.what, kind::fetched) << first.error;
  EXPECT_TRUE(first.validators.etag.empty());
  ASSERT_FALSE(first.validators.last_modified.empty());
  EXPECT_EQ(fetch(server.url(), first.validators).what, kind::not_modified);
  server.serve(worker_path("echo_v2"));
  EXPECT_EQ(fetch(server.url(), first.validators).what, kind::fetched);
}

TEST_F(PluginFetch, SaysWhyAFetchFailed) {
  plugin_server server(worker_path("echo_v1"));
  auto missing = fetch(server.url("/nope.so"));
  EXPECT_EQ(missing.what, kind::failed);
  EXPECT_NE(missing.error.find("HTTP 404"), std::string::npos) << missing.error;

  server.fail_with(503);
  auto down = fetch(server.url());
  EXPECT_NE(down.error.find("HTTP 503"), std::string::npos) << down.error;

  auto refused = fetch("http://127.0.0.1:" + std::to_string(free_port()) + "/libplugin.so");
  EXPECT_EQ(refused.what, kind::failed);
  EXPECT_NE(refused.error.find("cannot connect to 127.0.0.1"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("refused"), std::string::npos) << refused.error;

  EXPECT_NE(fetch("http://:80/x.so").error.find("not a valid"), std::string::npos);
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::is_empty(options.dir, ec)) << "failed downloads leave nothing behind";
}

TEST_F(PluginFetch, ACancelEndsAHungDownloadAtOnce) {
  plugin_server server(worker_path("echo_v1"));
  server.hang(true);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    wait_until([&] { return server.requests() > 0; }, 20s);
    cancel = true;
  });
  auto started = std::chrono::steady_clock::now();
  auto r = host::fetch_plugin(server.url(), "sys.pool", {}, options, &cancel);
  auto took = std::chrono::steady_clock::now() - started;
  canceller.join();
  EXPECT_EQ(r.what, kind::failed);
  EXPECT_NE(r.error.find("cancelled"), std::string::npos) << r.error;
  EXPECT_LT(took, 15s) << "ended by the cancel, not by the 30 s deadline";
}

TEST_F(PluginFetch, HttpsVerifiesTheServerAgainstTheGivenCA) {
  auto certs = make_test_certificates(dir / "tls");
  std::filesystem::create_directories(dir / "www");
  std::filesystem::copy_file(worker_path("echo_v1"), dir / "www" / "libecho.so");
  auto server = start_tls_file_server(dir / "www", certs, dir / "s_server.log");

  auto untrusted = fetch(server.url("libecho.so"));
  EXPECT_EQ(untrusted.what, kind::failed);
  EXPECT_NE(untrusted.error.find("TLS handshake"), std::string::npos) << untrusted.error;
  EXPECT_NE(untrusted.error.find("certificate"), std::string::npos) << untrusted.error;

  options.ca_file = certs.ca.string();
  auto trusted = fetch(server.url("libecho.so"));
  ASSERT_EQ(trusted.what, kind::fetched) << trusted.error;
  EXPECT_EQ(trusted.md5, runtime::file_md5(worker_path("echo_v1")));

  options.ca_file = (dir / "no-such-ca.pem").string();
  auto bad_ca = fetch(server.url("libecho.so"));
  EXPECT_NE(bad_ca.error.find("cannot use CA file"), std::string::npos) << bad_ca.error;
}

}  // namespace
}  // namespace dde::test
