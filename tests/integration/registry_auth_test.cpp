// Tokens and the cluster secret on a real dde-registry process: per-role 401/403/200 on the REST
// API, the dashboard's data and its live feed, the node link refused without the secret, one log
// line per refusal, and no secret in the log.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <boost/asio/io_context.hpp>
#include <fstream>
#include <future>

#include "dde/net/auth.hpp"
#include "dde/net/ws.hpp"
#include "registry_test_process.hpp"
#include "ws_probe.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;
using dde::test::ws_opens;

const std::string admin = "admin-2b7e151628aed2a6abf71588";
const std::string reader = "read-3c4fcf098815f7aba6d2ae28";
const std::string secret = "cluster-09cf4f3c762e71609b1d";

std::string write_file(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  auto path = dir / name;
  std::ofstream(path) << text << "\n";
  return path.string();
}

/// Registry with an admin token, a read-only token and a cluster secret, all from files.
std::vector<std::string> secured_flags() {
  auto dir = dde::test::fresh_dir("registry-auth");
  return {"--admin-token-file",    write_file(dir, "admin", admin),
          "--read-token-file",     write_file(dir, "read", reader),
          "--cluster-secret-file", write_file(dir, "secret", secret)};
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(RegistryAuth, EachRoleGets200OrA401Or403WithOneLogLineAndNoTokenInTheLog) {
  registry_process registry(secured_flags());
  fake_node::options o = named("node-a");
  o.cluster_secret = secret;
  fake_node node(registry.port(), o);
  ASSERT_TRUE(node.wait_registered()) << registry.log();

  // Reading: no token or a wrong one is 401 (with WWW-Authenticate), either token reads.
  auto none = registry.get("/registry/system/list");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.headers["www-authenticate"], "Bearer");
  EXPECT_NE(error_of(none).find("Authorization: Bearer"), std::string::npos) << none.body.dump();
  EXPECT_EQ(registry.call("GET", "/registry/system/list", "", "not-the-token").status, 401);
  EXPECT_EQ(registry.call("GET", "/registry/system/list", "", admin + "x").status, 401);
  auto read = registry.call("GET", "/registry/system/list", "", reader);
  ASSERT_EQ(read.status, 200);
  EXPECT_EQ(read.body[0]["bootstrapperId"], node.id());
  EXPECT_EQ(registry.call("GET", "/registry/system/list", "", admin).status, 200);
  EXPECT_EQ(registry.call("GET", "/metrics", "", reader).status, 200);
  EXPECT_EQ(registry.call("GET", "/metrics").status, 401);

  // Acting: the read-only token is 403, the admin token deploys.
  auto body = thesis_deploy_body(node.id());
  auto forbidden = registry.call("POST", "/registry/deploy", body.dump(), reader);
  EXPECT_EQ(forbidden.status, 403);
  EXPECT_NE(error_of(forbidden).find("admin token"), std::string::npos) << forbidden.body.dump();
  EXPECT_EQ(registry.call("POST", "/registry/deploy", body.dump()).status, 401);
  auto deploys = [&] {
    std::size_t n = 0;
    for (auto& r : node.requests()) n += r.value("action", "") == "deploy";
    return n;
  };
  EXPECT_EQ(deploys(), 0u) << "a refused deploy never reaches the node";
  auto deployed = registry.call("POST", "/registry/deploy", body.dump(), admin);
  EXPECT_EQ(deployed.status, 200) << deployed.body.dump();
  EXPECT_EQ(deploys(), 1u);

  // Open: /health and the dashboard's page (it asks for the token; it holds no data).
  EXPECT_EQ(registry.get("/health").status, 200);
  EXPECT_EQ(registry.get("/").status, 200);
  EXPECT_EQ(registry.get("/app.js").status, 200);

  // The live feed takes the token as ?token= (browsers cannot set headers on a WebSocket) or a header.
  EXPECT_FALSE(ws_opens(registry.port(), "/dashboard/live"));
  EXPECT_FALSE(ws_opens(registry.port(), "/dashboard/live?token=wrong"));
  EXPECT_TRUE(ws_opens(registry.port(), "/dashboard/live?token=" + reader));
  EXPECT_TRUE(ws_opens(registry.port(), "/dashboard/live", {{"Authorization", "Bearer " + admin}}));

  // One line per refusal, with the peer, method and path; never a token or the secret.
  auto log = registry.log();
  EXPECT_EQ(count(log, "refused GET /registry/system/list from 127.0.0.1:"), 3u) << log;
  EXPECT_EQ(count(log, "refused POST /registry/deploy from 127.0.0.1:"), 2u) << log;
  EXPECT_EQ(count(log, "(403)"), 1u) << log;
  EXPECT_EQ(count(log, "refused GET /dashboard/live from"), 2u) << log;
  for (auto& s : {admin, reader, secret}) EXPECT_EQ(log.find(s), std::string::npos) << "the log shows " << s;
}

TEST(RegistryAuth, ANodeWithoutTheClusterSecretCannotRegisterAndTheRegistryKeepsServing) {
  registry_process registry(secured_flags());
  fake_node without(registry.port(), named("no-secret"));
  EXPECT_TRUE(without.wait_closed());
  EXPECT_FALSE(without.wait_registered(1s));
  fake_node::options o = named("wrong-secret");
  o.cluster_secret = "not-" + secret;
  fake_node wrong(registry.port(), o);
  EXPECT_TRUE(wrong.wait_closed());
  ASSERT_TRUE(registry.running());
  EXPECT_EQ(registry.call("GET", "/registry/system/list", "", reader).body, json::array());
  o.name = "right-secret";
  o.cluster_secret = secret;
  fake_node right(registry.port(), o);
  EXPECT_TRUE(right.wait_registered()) << registry.log();
  auto log = registry.log();
  EXPECT_EQ(count(log, "refused a WebSocket link from 127.0.0.1:"), 2u) << log;
  EXPECT_NE(log.find("/registry: no cluster secret"), std::string::npos) << log;
  EXPECT_NE(log.find("/registry: wrong cluster secret"), std::string::npos) << log;
  EXPECT_EQ(log.find(secret), std::string::npos);
}

TEST(RegistryAuth, WithoutTokensTheApiIsOpenAsBefore) {
  registry_process registry;
  EXPECT_EQ(registry.get("/registry/system/list").status, 200);
  auto shutdown = registry.call("POST", "/registry/system/shutdown", "{}");
  EXPECT_NE(shutdown.status, 401);
  EXPECT_NE(shutdown.status, 403);
  EXPECT_TRUE(ws_opens(registry.port(), "/dashboard/live"));
  fake_node node(registry.port(), named("open"));
  EXPECT_TRUE(node.wait_registered());
}

TEST(RegistryAuth, AReadTokenWithoutAnAdminTokenIsABadCommandLine) {
  auto dir = dde::test::fresh_dir("registry-auth-bad");
  dde::test::child_process proc({dde::test::bin_path("dde-registry").string(), "--port", "0",
                                 "--read-token-file", write_file(dir, "read", reader)},
                                dir / "log");
  auto status = proc.wait_exit(10s);
  ASSERT_TRUE(status);
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(proc.log().find("needs an admin token"), std::string::npos) << proc.log();
}

}  // namespace
}  // namespace dde::registry::test
