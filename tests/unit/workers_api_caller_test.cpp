// The api_caller worker against the in-process test API server (its clock in the test's hands),
// driven through a recording worker_context: success, 429 to backoff(), the naive per-worker retry
// baseline, failures to supervision, bad arguments.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "../../workers/api_caller/api_response.hpp"
#include "api_server.hpp"
#include "dde_test.hpp"
#include "recording_context.hpp"

namespace dde::test {
namespace {

class ApiCaller : public ::testing::Test, public plugin_harness {
 protected:
  ApiCaller() : plugin_harness("api_caller") {}
  void start_api(std::uint32_t limit, int penalty_ms) {
    api_server_options o;
    o.limits.limit = limit;
    o.limits.per = std::chrono::milliseconds(1000);
    o.limits.penalty = std::chrono::milliseconds(penalty_ms);
    o.limits.max_penalty = std::chrono::milliseconds(100000);
    o.clock = [this] {
      return std::chrono::steady_clock::time_point(std::chrono::hours(1)) +
             std::chrono::milliseconds(now_ms.load());
    };
    api = std::make_unique<api_server_thread>(std::move(o));
  }
  /// Creates the worker with `args` (plus the server's URL unless given).
  void create(nlohmann::json args) {
    if (!args.contains("url")) args["url"] = api->call_url();
    plugin_harness::create(std::move(args));
  }

  std::atomic<std::int64_t> now_ms{0};
  std::unique_ptr<api_server_thread> api;
};

TEST_F(ApiCaller, ASuccessRepliesWithTheAnswerLogsAndIsDone) {
  start_api(5, 1000);
  auto log = fresh_dir("api_caller_ok") / "calls.log";
  create({{"log", log.string()}});
  receive(make_message({{"seq", 3}, {"id", "x"}}, "src/requester", "src/answers"));
  EXPECT_EQ(ctx->dones, 1);
  ASSERT_EQ(ctx->replies.size(), 1u);
  EXPECT_EQ(ctx->replies[0].body["status"], 200);
  EXPECT_EQ(ctx->replies[0].body["seq"], 3);
  EXPECT_EQ(ctx->replies[0].body["answer"]["id"], "x");
  EXPECT_EQ(ctx->replies[0].body["answer"]["n"], 1);
  receive(make_message({{"seq", 4}}));  // no replyTo, not asked: no reply
  EXPECT_EQ(ctx->dones, 2);
  EXPECT_EQ(ctx->replies.size(), 1u);
  std::ifstream in(log);
  std::int64_t seq = 0, us = 0;
  std::string what;
  std::int64_t call_us = 0;
  ASSERT_TRUE(in >> seq >> what >> call_us);
  EXPECT_EQ(seq, 3);
  EXPECT_EQ(what, "CALL") << "the call's start comes first";
  ASSERT_TRUE(in >> seq >> what >> us);
  EXPECT_EQ(seq, 3);
  EXPECT_EQ(what, "OK");
  EXPECT_LE(call_us, us);
  ASSERT_TRUE(in >> seq >> what >> us);
  EXPECT_EQ(seq, 4);
  EXPECT_EQ(what, "CALL");
  EXPECT_EQ(api->stats().ok, 2u);
}

TEST_F(ApiCaller, A429BacksOffThePoolWithTheDelayTheApiAskedFor) {
  start_api(1, 1500);
  create(nlohmann::json::object());
  receive(make_message({{"seq", 1}}));
  receive(make_message({{"seq", 2}}));
  EXPECT_EQ(ctx->dones, 1);
  ASSERT_EQ(ctx->backoffs.size(), 1u);
  EXPECT_EQ(ctx->backoffs[0].delay, std::chrono::milliseconds(1500))
      << "Retry-After-Ms, not Retry-After's 2 s";
  EXPECT_NE(ctx->backoffs[0].reason.find("429"), std::string::npos) << ctx->backoffs[0].reason;
  EXPECT_NE(ctx->backoffs[0].reason.find(api->call_url()), std::string::npos) << ctx->backoffs[0].reason;
  EXPECT_EQ(ctx->pending_timers(), 0u) << "with governance the pool waits, not the worker";
}

TEST_F(ApiCaller, TheNaiveBaselineRetriesItselfAndEscalatesThePenalty) {
  start_api(1, 300);
  create({{"governance", false}, {"retryLimit", 2}});
  receive(make_message({{"seq", 1}}));
  receive(make_message({{"seq", 2}}));
  EXPECT_TRUE(ctx->backoffs.empty());
  ASSERT_EQ(ctx->delays.size(), 1u);
  EXPECT_EQ(ctx->delays[0], std::chrono::milliseconds(300));
  // The fake clock has not moved, so the retry lands inside the cessation, as retries do when the
  // rest of the pool keeps calling: it escalates the penalty.
  ctx->fire_next();
  ASSERT_EQ(ctx->delays.size(), 2u);
  EXPECT_EQ(ctx->delays[1], std::chrono::milliseconds(600));
  EXPECT_EQ(api->stats().escalations, 1u);
  try {
    ctx->fire_next();
    FAIL() << "no exception past retryLimit";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("gave up after 2 retries"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx->dones, 1);
}

TEST_F(ApiCaller, TheNaiveBaselineSucceedsWhenItWaitsLongEnough) {
  start_api(1, 300);
  create({{"governance", false}});
  receive(make_message({{"seq", 1}}));
  receive(make_message({{"seq", 2}}));
  now_ms += 1000;
  ctx->fire_next();
  EXPECT_EQ(ctx->dones, 2);
  EXPECT_EQ(api->stats().escalations, 0u);
}

TEST_F(ApiCaller, OtherStatusesAndDeadServersThrowWithTheUrl) {
  start_api(5, 1000);
  auto base = "http://127.0.0.1:" + std::to_string(api->port());
  create({{"url", base + "/missing"}});
  try {
    receive(make_message({{"seq", 1}}));
    FAIL() << "a 404 did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("POST " + base + "/missing answered 404"), std::string::npos)
        << e.what();
  }
  auto closed = free_port();
  create({{"url", "http://127.0.0.1:" + std::to_string(closed) + "/call"}, {"timeoutMs", 2000}});
  try {
    receive(make_message({{"seq", 1}}));
    FAIL() << "a refused connection did not throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx->dones, 0);
}

TEST_F(ApiCaller, BadArgumentsRefuseTheDeploymentSayingWhich) {
  start_api(5, 1000);
  auto error_for = [&](nlohmann::json args) {
    try {
      create(std::move(args));
      return std::string("accepted");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  EXPECT_NE(error_for({{"url", "ftp://example.com/x"}})
                .find("args.url \"ftp://example.com/x\" is not an http:// or https:// URL"),
            std::string::npos);
  EXPECT_NE(error_for({{"headers", {{"X-Key", 5}}}}).find("args.headers.X-Key must be a string"),
            std::string::npos);
  EXPECT_NE(error_for({{"timeoutMs", 0}}).find("timeoutMs"), std::string::npos);
  EXPECT_NE(error_for({{"governance", "yes"}}).find("\"governance\" has the wrong type"), std::string::npos);
  EXPECT_EQ(error_for({{"headers", {{"Authorization", "Bearer t"}}}}), "accepted");
}

TEST(ApiResponse, RetryDelayPrefersMillisecondsThenSecondsThenTheDefault) {
  using std::chrono::milliseconds;
  EXPECT_EQ(samples::retry_delay({{"retry-after-ms", "250"}, {"retry-after", "1"}}, milliseconds(9)),
            milliseconds(250));
  EXPECT_EQ(samples::retry_delay({{"retry-after", "3"}}, milliseconds(9)), milliseconds(3000));
  EXPECT_EQ(samples::retry_delay({{"retry-after", "Wed, 21 Oct 2015 07:28:00 GMT"}}, milliseconds(9)),
            milliseconds(9));
  EXPECT_EQ(samples::retry_delay({{"retry-after-ms", "-5"}}, milliseconds(9)), milliseconds(9));
  EXPECT_EQ(samples::retry_delay({}, milliseconds(1000)), milliseconds(1000));
  EXPECT_EQ(samples::retry_delay({{"retry-after", "999999999999999"}}, milliseconds(9)),
            samples::max_retry_delay);
}

TEST(ApiResponse, ClassifiesAnswers) {
  net::http_result ok;
  ok.status = 201;
  ok.body = "not json";
  auto o = samples::classify(ok, "http://h/x", std::chrono::milliseconds(5));
  EXPECT_EQ(o.what, samples::api_outcome::kind::ok);
  EXPECT_EQ(o.answer, "not json");
  net::http_result none;
  none.error = "timed out";
  EXPECT_EQ(samples::classify(none, "http://h/x", {}).reason, "POST http://h/x failed: timed out");
  net::http_result busy;
  busy.status = 503;
  busy.body = std::string(500, 'b');
  auto failed = samples::classify(busy, "http://h/x", {});
  EXPECT_EQ(failed.what, samples::api_outcome::kind::failed);
  EXPECT_LT(failed.reason.size(), 300u) << "the body is cut to an excerpt";
}

}  // namespace
}  // namespace dde::test
