// The test API server over HTTP, with its clock in the test's hands: the limit, 429 with both
// headers, escalation when called during a cessation, forgiveness after a quiet period. The
// executable's command line too.
#include "api_server.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "dde/net/http_client.hpp"
#include "dde_test.hpp"

namespace dde::test {
namespace {

class ApiServer : public ::testing::Test {
 protected:
  void start(api_limits limits, std::chrono::milliseconds work = {}, std::string log = {}) {
    api_server_options o;
    o.limits = limits;
    o.work = work;
    o.log_calls = std::move(log);
    o.clock = [this] {
      return std::chrono::steady_clock::time_point(std::chrono::hours(1)) +
             std::chrono::milliseconds(now_ms.load());
    };
    server = std::make_unique<api_server_thread>(std::move(o));
  }
  static api_limits limits(std::uint32_t n, int per, int penalty, double factor, int max) {
    api_limits l;
    l.limit = n;
    l.per = std::chrono::milliseconds(per);
    l.penalty = std::chrono::milliseconds(penalty);
    l.penalty_factor = factor;
    l.max_penalty = std::chrono::milliseconds(max);
    return l;
  }
  net::http_result call(nlohmann::json body = nlohmann::json::object()) {
    return net::http_fetch("POST", server->call_url(), body.dump(), {}, 10s);
  }
  nlohmann::json stats() {
    auto r =
        net::http_fetch("GET", "http://127.0.0.1:" + std::to_string(server->port()) + "/stats", {}, {}, 10s);
    EXPECT_EQ(r.status, 200) << r.error << r.body;
    return nlohmann::json::parse(r.body, nullptr, false);
  }
  void advance(int ms) { now_ms += ms; }
  /// Asserts a 429 whose cessation has `ms` left.
  static void expect_limited(const net::http_result& r, int ms) {
    ASSERT_EQ(r.status, 429) << r.error << r.body;
    EXPECT_EQ(r.headers.at("retry-after-ms"), std::to_string(ms));
    EXPECT_EQ(r.headers.at("retry-after"), std::to_string((ms + 999) / 1000));
    auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["error"], "rate limited");
    EXPECT_EQ(body["retryAfterMs"], ms);
  }

  std::atomic<std::int64_t> now_ms{0};
  std::unique_ptr<api_server_thread> server;
};

TEST_F(ApiServer, AcceptsTheLimitThenAnswers429WithBothRetryHeaders) {
  start(limits(3, 1000, 1500, 2, 10000));
  for (int i = 0; i < 3; ++i) {
    auto r = call({{"id", "req-" + std::to_string(i)}});
    ASSERT_EQ(r.status, 200) << r.error << r.body;
    auto body = nlohmann::json::parse(r.body);
    EXPECT_EQ(body["ok"], true);
    EXPECT_EQ(body["id"], "req-" + std::to_string(i));
    EXPECT_EQ(body["n"], i + 1);
  }
  expect_limited(call({{"id", 7}}), 1500);  // Retry-After: 2, rounded up from 1.5 s
  auto s = stats();
  EXPECT_EQ(s["calls"], 4);
  EXPECT_EQ(s["ok"], 3);
  EXPECT_EQ(s["limited"], 1);
  EXPECT_EQ(s["escalations"], 0);
  EXPECT_EQ(s["callsDuringCessation"], 0);
  EXPECT_EQ(s["currentPenaltyMs"], 1500);
}

TEST_F(ApiServer, TheWindowSlidesRatherThanResettingPerTick) {
  start(limits(2, 1000, 100, 2, 1000));
  ASSERT_EQ(call().status, 200);  // t = 0
  advance(600);
  ASSERT_EQ(call().status, 200);  // t = 600
  advance(400);
  ASSERT_EQ(call().status, 200) << "t = 1000: the call at 0 left the window";
  advance(500);
  expect_limited(call(), 100);  // t = 1500: the calls at 600 and 1000 are both within 1 s
}

TEST_F(ApiServer, CallingDuringACessationEscalatesItUpToTheMaximum) {
  start(limits(1, 1000, 500, 2, 3000));
  ASSERT_EQ(call().status, 200);
  expect_limited(call(), 500);
  advance(100);
  expect_limited(call(), 1000);  // restarted, twice as long
  advance(999);
  expect_limited(call(), 2000);
  expect_limited(call(), 3000);  // capped
  expect_limited(call(), 3000);
  auto s = stats();
  EXPECT_EQ(s["escalations"], 3) << s.dump();
  EXPECT_EQ(s["callsDuringCessation"], 4) << s.dump();
  EXPECT_EQ(s["maxPenaltyMs"], 3000);
  EXPECT_EQ(s["limited"], 5);
  EXPECT_EQ(s["ok"], 1);
}

TEST_F(ApiServer, CallsWithinTheGraceOfACessationAreRefusedButNotEscalated) {
  auto l = limits(1, 1000, 500, 2, 3000);
  l.grace = std::chrono::milliseconds(50);
  start(l);
  ASSERT_EQ(call().status, 200);
  expect_limited(call(), 500);
  advance(49);
  expect_limited(call(), 451);  // on the wire when the cessation began: the time left, no escalation
  advance(1);
  expect_limited(call(), 1000);  // past the grace: escalated
  auto s = stats();
  EXPECT_EQ(s["escalations"], 1) << s.dump();
  EXPECT_EQ(s["limited"], 3);
}

TEST_F(ApiServer, ACessationLeftAloneEndsAndItsPenaltyIsForgivenAfterAQuietPeriod) {
  start(limits(1, 100, 400, 2, 10000));
  ASSERT_EQ(call().status, 200);
  expect_limited(call(), 400);
  expect_limited(call(), 800);  // escalated: the penalty is now 800 ms
  advance(800);
  ASSERT_EQ(call().status, 200) << "the cessation is over";
  EXPECT_EQ(stats()["currentPenaltyMs"], 800) << "not forgiven yet";
  advance(399);
  EXPECT_EQ(stats()["currentPenaltyMs"], 800);
  ASSERT_EQ(call().status, 200);
  // A new violation before the quiet period ends costs the escalated penalty.
  expect_limited(call(), 800);
  advance(800 + 400);
  EXPECT_EQ(stats()["currentPenaltyMs"], 400) << "one first penalty of quiet after the end";
  ASSERT_EQ(call().status, 200);
  expect_limited(call(), 400);
}

TEST_F(ApiServer, ResetForgetsCallsCessationsAndCounters) {
  start(limits(1, 1000, 5000, 2, 10000));
  ASSERT_EQ(call().status, 200);
  expect_limited(call(), 5000);
  auto r =
      net::http_fetch("POST", "http://127.0.0.1:" + std::to_string(server->port()) + "/reset", {}, {}, 10s);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(stats()["calls"], 0);
  auto again = call();
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(nlohmann::json::parse(again.body)["n"], 1);
}

TEST_F(ApiServer, BadRequestsGetPreciseErrors) {
  start(limits(5, 1000, 100, 2, 1000));
  auto base = "http://127.0.0.1:" + std::to_string(server->port());
  auto not_json = net::http_fetch("POST", base + "/call", "{nope", {}, 10s);
  EXPECT_EQ(not_json.status, 400);
  EXPECT_NE(not_json.body.find("not JSON"), std::string::npos) << not_json.body;
  auto get_call = net::http_fetch("GET", base + "/call", {}, {}, 10s);
  EXPECT_EQ(get_call.status, 405);
  EXPECT_EQ(get_call.headers["allow"], "POST");
  auto unknown = net::http_fetch("POST", base + "/calls", "{}", {}, 10s);
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.body.find("/calls"), std::string::npos) << unknown.body;
  EXPECT_EQ(stats()["calls"], 0) << "refused requests are not calls";
  auto empty = net::http_fetch("POST", base + "/call", {}, {}, 10s);
  EXPECT_EQ(empty.status, 200) << "an empty body is an empty call";
}

TEST_F(ApiServer, AcceptedCallsTakeTheWorkTimeAndEveryCallIsLogged) {
  auto log = fresh_dir("api_server_log") / "calls.log";
  start(limits(1, 1000, 100, 2, 1000), 200ms, log.string());
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(call({{"id", "a"}}).status, 200);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_EQ(net::http_fetch("POST", server->call_url(), R"({"id":2,"seq":7})", {{"X-Caller", "pool-b"}}, 10s)
                .status,
            429);
  advance(10);
  EXPECT_EQ(call({{"id", 3}}).status, 429);
  std::ifstream in(log);
  std::string line1, line2, line3;
  std::getline(in, line1);
  std::getline(in, line2);
  std::getline(in, line3);
  std::istringstream a(line1), b(line2), c(line3);
  std::int64_t us1 = 0, us2 = 0, retry2 = 0;
  int status1 = 0, status2 = 0;
  std::string id1, id2, seq1, seq2, caller1, caller2, why2, rest1;
  a >> us1 >> status1 >> id1 >> seq1 >> caller1 >> rest1;
  b >> us2 >> status2 >> id2 >> seq2 >> caller2 >> retry2 >> why2;
  EXPECT_EQ(status1, 200);
  EXPECT_EQ(id1, "a");
  EXPECT_EQ(seq1, "-") << "no seq in the body";
  EXPECT_EQ(caller1, "-") << "no X-Caller header";
  EXPECT_EQ(rest1, "") << "an accepted call has no refusal fields: " << line1;
  EXPECT_EQ(status2, 429);
  EXPECT_EQ(id2, "2");
  EXPECT_EQ(seq2, "7");
  EXPECT_EQ(caller2, "pool-b");
  EXPECT_EQ(retry2, 100);
  EXPECT_EQ(why2, "violation");
  EXPECT_NE(line3.find(" 429 3 - - 200 during-cessation"), std::string::npos)
      << "10 ms into the 100 ms cessation (no grace), doubled: " << line3;
  EXPECT_GT(us1, 1600000000000000) << "epoch microseconds";
  EXPECT_LE(us1, us2);
}

TEST(ApiServerLimits, OutOfRangeLimitsAreRefusedByName) {
  api_limits l;
  l.max_penalty = 10ms;
  l.penalty = 100ms;
  try {
    api_limiter bad(l);
    FAIL() << "accepted a max penalty below the penalty";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("max penalty"), std::string::npos) << e.what();
  }
  l = {};
  l.penalty_factor = 0.5;
  EXPECT_THROW(api_limiter{l}, std::invalid_argument);
  l = {};
  l.limit = 0;
  EXPECT_THROW(api_limiter{l}, std::invalid_argument);
}

TEST(ApiServerExecutable, ListensWritesItsPortAndRefusesBadFlags) {
  auto dir = fresh_dir("api_server_exe");
  auto port_file = dir / "port";
  child_process proc({bin_path("dde-test-api-server").string(), "--port", "0", "--port-file",
                      port_file.string(), "--limit", "1", "--per-ms", "60000", "--penalty-ms", "1200"},
                     dir / "server.log");
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(port_file); }, 30s)) << proc.log();
  int port = 0;
  std::ifstream(port_file) >> port;
  ASSERT_GT(port, 0);
  EXPECT_TRUE(wait_until(
      [&] { return proc.log().find("listening on 127.0.0.1:" + std::to_string(port)) != std::string::npos; },
      10s))
      << proc.log();
  auto url = "http://127.0.0.1:" + std::to_string(port) + "/call";
  EXPECT_EQ(net::http_fetch("POST", url, "{}", {}, 10s).status, 200);
  auto limited = net::http_fetch("POST", url, "{}", {}, 10s);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(limited.headers["retry-after"], "2");
  EXPECT_EQ(limited.headers["retry-after-ms"], "1200");
  EXPECT_EQ(proc.stop(), 0) << proc.log();

  child_process bad({bin_path("dde-test-api-server").string(), "--penalty-factor", "two"}, dir / "bad.log");
  auto status = bad.wait_exit(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 2) << *status;
  EXPECT_NE(bad.log().find("Could not convert: --penalty-factor = two"), std::string::npos) << bad.log();

  child_process short_max(
      {bin_path("dde-test-api-server").string(), "--penalty-ms", "500", "--max-penalty-ms", "100"},
      dir / "short.log");
  status = short_max.wait_exit(30s);
  ASSERT_TRUE(status.has_value());
  EXPECT_NE(short_max.log().find("max penalty (100 ms) is shorter than the penalty (500 ms)"),
            std::string::npos)
      << short_max.log();
}

}  // namespace
}  // namespace dde::test
