// The one result type: a value or an error_info, and the HTTP status a daemon's failure carries.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dde/protocol/result.hpp"

namespace dde {
namespace {

enum class why { other = 0, missing = 7 };

TEST(Result, HoldsAValueOrAFailureWithItsCode) {
  result<int> ok = 5;
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok.value(), 5);
  auto no = result<int>::failure("no such thing", why::missing);
  ASSERT_FALSE(no);
  EXPECT_EQ(no.error(), "no such thing");
  EXPECT_EQ(no.code<why>(), why::missing);
  auto passed_on = result<std::string>::failure_of(no, [](const std::string& e) { return "lookup: " + e; });
  EXPECT_EQ(passed_on.error(), "lookup: no such thing");
  EXPECT_EQ(passed_on.error_code(), 7);
}

TEST(Result, AnHttpFailureCarriesItsStatusAndAnythingElseReadsAs500) {
  auto gone = http_failure<nlohmann::json>(404, "no pool \"p\"");
  ASSERT_FALSE(gone);
  EXPECT_EQ(http_status(gone), 404);
  EXPECT_EQ(gone.error(), "no pool \"p\"");
  EXPECT_EQ(http_status(result<nlohmann::json>(nlohmann::json::object())), 200);
  EXPECT_EQ(http_status(result<int>::failure("plain")), 500);
  EXPECT_EQ(http_status(result<int>::failure("not a status", why::missing)), 500);
  EXPECT_EQ(http_status(http_failure<int>(302, "a redirect is no failure status")), 500);
}

}  // namespace
}  // namespace dde
