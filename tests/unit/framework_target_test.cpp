// The path and query parameters of an HTTP request target (dde/net/target.hpp).
#include <gtest/gtest.h>

#include "dde/net/target.hpp"

namespace {

using dde::net::query_param;
using dde::net::target_path;

TEST(RequestTarget, ThePathStopsAtTheFirstQuestionMark) {
  EXPECT_EQ(target_path("/a?b"), "/a");
  EXPECT_EQ(target_path("/a"), "/a");
  EXPECT_EQ(target_path("?x"), "");
  EXPECT_EQ(target_path("/a?b?c"), "/a");
  EXPECT_EQ(target_path(""), "");
  static_assert(target_path("/metrics?x=1") == "/metrics");
}

TEST(RequestTarget, AQueryParameterIsFoundByItsWholeNameAndPercentDecoded) {
  EXPECT_EQ(query_param("/live?x=1&token=a%2Fb+c", "token"), "a/b c");
  EXPECT_EQ(query_param("/live?token=first&token=second", "token"), "first");
  EXPECT_EQ(query_param("/live?x=1&flag&y=2", "flag"), "") << "a name without '=' has an empty value";
  EXPECT_EQ(query_param("/live?mytoken=a", "token"), std::nullopt) << "a longer name is another parameter";
  EXPECT_EQ(query_param("/live?x=token=a", "token"), std::nullopt) << "a value is not a name";
  EXPECT_EQ(query_param("/live", "token"), std::nullopt);
  EXPECT_EQ(query_param("/live?", "token"), std::nullopt);
  EXPECT_EQ(query_param("/live?a=%zz%4", "a"), "%zz%4") << "a malformed escape stays as it was";
  EXPECT_EQ(query_param("/live?a=1?b=2", "a"), "1?b=2");
}

}  // namespace

namespace {

TEST(RequestTarget, PercentEncodingKeepsUnreservedCharactersAndDecodesBack) {
  using dde::net::percent_encode;
  EXPECT_EQ(percent_encode("abc-XYZ_0.9~"), "abc-XYZ_0.9~");
  EXPECT_EQ(percent_encode("a/b c&d=e?"), "a%2Fb%20c%26d%3De%3F");
  EXPECT_EQ(percent_encode("\xc3\xa9"), "%C3%A9") << "each byte of UTF-8";
  EXPECT_EQ(percent_encode(""), "");
  const std::string id = "id with/odd&chars=%+é";
  EXPECT_EQ(query_param("/dlq?id=" + percent_encode(id), "id"), id);
}

}  // namespace
