// Which role each request on the registry's port needs, and the guard's answers, without sockets.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "access_control.hpp"

namespace dde::registry {
namespace {

TEST(AccessControl, ReadingNeedsTheReadRoleActingTheAdminOneAndHealthAndThePageNone) {
  EXPECT_EQ(required_role("GET", "/registry/system/list", false), role::read);
  EXPECT_EQ(required_role("HEAD", "/registry/health", false), role::read);
  EXPECT_EQ(required_role("GET", "/metrics", false), role::read);
  EXPECT_EQ(required_role("POST", "/registry/deploy", false), role::admin);
  EXPECT_EQ(required_role("DELETE", "/registry/system/list", false), role::admin);
  EXPECT_EQ(required_role("POST", "/health", false), role::admin);
  EXPECT_EQ(required_role("GET", "/health", false), role::open);
  EXPECT_EQ(required_role("GET", "/", false), role::open);
  EXPECT_EQ(required_role("GET", "/app.js", false), role::open);
  EXPECT_EQ(required_role("GET", "/nope.js", false), role::read);
  EXPECT_EQ(required_role("GET", "/dashboard/live", true), role::read);
  EXPECT_EQ(required_role("GET", "/registry", true), role::open) << "nodes show the cluster secret instead";
}

TEST(AccessControl, AnswersAMissingTokenWith401AReadTokenOnAnActionWith403AndNeverLogsTokens) {
  std::ostringstream out;
  auto log = std::make_shared<spdlog::logger>("t", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  auto guard = make_access_guard({"adm1n", "re4d", ""}, log);
  net::http_request req{"POST", "/registry/deploy", "", {}, "10.0.0.9:1234"};
  auto none = guard(req, false);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(none->headers["WWW-Authenticate"], "Bearer");
  req.headers["authorization"] = "Bearer re4d";
  auto forbidden = guard(req, false);
  ASSERT_TRUE(forbidden);
  EXPECT_EQ(forbidden->status, 403);
  req.headers["authorization"] = "Bearer adm1n";
  EXPECT_FALSE(guard(req, false));
  req.method = "GET";
  req.target = "/registry/system/list";
  req.headers["authorization"] = "Bearer re4d";
  EXPECT_FALSE(guard(req, false));
  net::http_request feed{"GET", "/dashboard/live?token=re4d", "", {}, "10.0.0.9:1"};
  EXPECT_FALSE(guard(feed, true));
  feed.target = "/dashboard/live?token=nope";
  EXPECT_TRUE(guard(feed, true));
  EXPECT_NE(out.str().find("refused POST /registry/deploy from 10.0.0.9:1234: no bearer token (401)"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("(403)"), std::string::npos);
  EXPECT_NE(out.str().find("refused GET /dashboard/live from 10.0.0.9:1: wrong bearer token"),
            std::string::npos);
  for (auto s : {"adm1n", "re4d", "nope"}) EXPECT_EQ(out.str().find(s), std::string::npos) << s;
  EXPECT_FALSE(make_access_guard({}, log)(req, false)) << "no tokens: open";
}

}  // namespace
}  // namespace dde::registry
