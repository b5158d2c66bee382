// Rate-limit governance (issue 5) on a real cluster: a worker that reports a rate limit
// (`backoff(delay)` or `throw dde::rate_limited`) pauses its whole pool, the message is tried again
// after the delay, up to the retry limit, then dead-lettered with its reason; per-key sub-pools cap
// how many messages of one key are in flight.
#include <fstream>
#include <map>

#include "api_server.hpp"
#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

struct timed {
  std::int64_t seq;
  std::int64_t us;
};

/// "SEQ MICROS" lines of every log_dir/<prefix>*.log.
std::vector<timed> read_timed(const std::filesystem::path& dir, const std::string& prefix) {
  std::vector<timed> out;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".log") continue;
    std::ifstream in(entry.path());
    timed t{};
    while (in >> t.seq >> t.us) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const timed& a, const timed& b) { return a.us < b.us; });
  return out;
}

class Governance : public Cluster {
 protected:
  std::string deploy_faulty(nlohmann::json args, nlohmann::json extra, int workers) {
    node_ = std::make_unique<activator_process>(node("gov-" + sys));
    id = node_id(registry, "gov-" + sys);
    auto r = deploy_pool(id, sys, "faulty", "faulty", args, workers, extra);
    EXPECT_EQ(r.status, 200) << r.body;
    return id;
  }
  void produce(int n, nlohmann::json extra_args = nlohmann::json::object(), const std::string& to = "faulty") {
    nlohmann::json args = {{"to", sys + "/" + to}, {"count", n}};
    args.update(extra_args);
    auto r = deploy(deploy_body(id, mqs.url(), sys, "producer", "producer", args));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  nlohmann::json pool(const std::string& isolate = "faulty") {
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/" + isolate) return p;
    return nullptr;
  }
  seq_report handled() { return read_seq_logs(dir, "faulty-"); }

  std::string sys = unique_system("gov");
  std::string id;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Governance, BackoffPausesEveryWorkerOfThePoolAndRetriesTheMessage) {
  const int n = 300;
  const auto pause = 1500ms;
  deploy_faulty({{"backoff_on", {40}}, {"backoff_times", 2}, {"backoff_ms", pause.count()}}, nlohmann::json::object(), 4);
  produce(n);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= std::size_t(n); }, long_wait));
  EXPECT_TRUE(handled().missing(n).empty());
  auto backoffs = read_timed(dir, "backoff-");
  ASSERT_EQ(backoffs.size(), 2u);
  // The retry comes only after the pause...
  EXPECT_GE(backoffs[1].us - backoffs[0].us, std::chrono::microseconds(pause).count());
  // ...and no worker of the pool started a message while it ran (a short grace for a start that
  // had passed the gate as the pause began).
  const std::int64_t grace = 100000, pause_us = std::chrono::microseconds(pause).count();
  auto starts = read_timed(dir, "faulty-");
  for (auto& b : backoffs)
    for (auto& s : starts)
      EXPECT_FALSE(s.us > b.us + grace && s.us < b.us + pause_us - 20000)
          << "seq " << s.seq << " started " << (s.us - b.us) / 1000 << " ms into a pause of " << pause.count() << " ms";
  // Without the pool-wide pause, the three other workers would have gone on: the stream lasted long enough.
  auto seq40 = std::find_if(starts.begin(), starts.end(), [](const timed& t) { return t.seq == 40; });
  ASSERT_NE(seq40, starts.end());
  EXPECT_GE(seq40->us - backoffs[1].us, pause_us) << "the second try waited for the second pause too";
  auto p = pool();
  EXPECT_EQ(p["governance"]["rateLimited"], 2) << p.dump();
  EXPECT_EQ(p["governance"]["retries"], 2);
  EXPECT_EQ(p["governance"]["deadLettered"], 0);
  EXPECT_GE(p["governance"]["pauses"].get<int>(), 2);
  EXPECT_EQ(p["stats"]["failed"], 0) << "a rate limit is not a failure for supervision";
  EXPECT_EQ(p["stats"]["restarts"], 0);
}

TEST_F(Governance, TheRetryLimitDeadLettersTheMessageWithItsReason) {
  const int n = 50;
  deploy_faulty({{"backoff_on", {7}}, {"backoff_times", 1000}, {"backoff_ms", 100}, {"backoff_throw", true}},
                {{"backoff", {{"retryLimit", 2}}}}, 2);
  produce(n);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= std::size_t(n - 1); }, long_wait));
  std::optional<std::string> dead;
  ASSERT_TRUE(wait_until([&] { return (dead = shared_broker().get("dde.dead." + sys + ".faulty")).has_value(); }, 60s));
  auto e = nlohmann::json::parse(*dead);
  EXPECT_EQ(e["body"]["seq"], 7) << *dead;
  EXPECT_EQ(e["deadLetter"]["attempts"], 3) << *dead;
  EXPECT_EQ(e["deadLetter"]["pool"], sys + "/faulty");
  EXPECT_NE(e["deadLetter"]["reason"].get<std::string>().find("retry limit 2"), std::string::npos) << *dead;
  EXPECT_NE(e["deadLetter"]["reason"].get<std::string>().find("asked to back off on 7"), std::string::npos) << *dead;
  EXPECT_EQ(read_timed(dir, "backoff-").size(), 3u);
  auto missing = handled().missing(n);
  EXPECT_EQ(missing, std::vector<std::int64_t>{7});
  auto p = pool();
  EXPECT_EQ(p["governance"]["deadLettered"], 1) << p.dump();
  EXPECT_EQ(p["governance"]["retries"], 2);
  // Acked once dead-lettered: nothing of the pool is left in its queue.
  EXPECT_TRUE(wait_until([&] { return shared_broker().queue_depth(sys + ".faulty").value_or(1) == 0; }, 30s));
}

TEST_F(Governance, APauseReachesEveryReplicaOfThePoolThroughTheMqs) {
  // Two replicas of one pool, on two nodes, each through its own MQS process: a backoff in one pauses both.
  std::filesystem::create_directories(dir / "mqs2");
  auto mqs2 = start_mqs(shared_broker(), dir / "mqs2", 16);
  node_ = std::make_unique<activator_process>(node("gov-a-" + sys));
  id = node_id(registry, "gov-a-" + sys);
  auto node_b = std::make_unique<activator_process>(node("gov-b-" + sys));
  auto id_b = node_id(registry, "gov-b-" + sys);
  const auto pause = 2000ms;
  nlohmann::json args = {{"backoff_on", {60}}, {"backoff_ms", pause.count()}, {"log_dir", dir}};
  auto r = deploy_pool(id, sys, "faulty", "faulty", args, 2);
  ASSERT_EQ(r.status, 200) << r.body;
  r = deploy(deploy_body(id_b, mqs2.url(), sys, "faulty", "faulty", args, {"localhost", "localhost"}));
  ASSERT_EQ(r.status, 200) << r.body;
  const int n = 600;
  produce(n);
  ASSERT_TRUE(wait_until([&] { return handled().unique.size() >= std::size_t(n); }, long_wait));
  EXPECT_TRUE(handled().missing(n).empty());
  auto backoffs = read_timed(dir, "backoff-");
  ASSERT_EQ(backoffs.size(), 1u);
  const std::int64_t grace = 100000, pause_us = std::chrono::microseconds(pause).count();
  auto starts = read_timed(dir, "faulty-");
  for (auto& s : starts)
    EXPECT_FALSE(s.us > backoffs[0].us + grace && s.us < backoffs[0].us + pause_us - 20000)
        << "seq " << s.seq << " started " << (s.us - backoffs[0].us) / 1000 << " ms into the pause";
  nlohmann::json a, b;
  for (auto& p : pools_of(registry, id, sys)) if (p["id"] == sys + "/faulty") a = p;
  for (auto& p : pools_of(registry, id_b, sys)) if (p["id"] == sys + "/faulty") b = p;
  ASSERT_TRUE(a.is_object() && b.is_object());
  // One replica was hit and paused itself; the other heard it through the MQS.
  auto own = a["governance"]["pauses"].get<int>() + b["governance"]["pauses"].get<int>();
  EXPECT_EQ(own, 1) << a.dump() << "\n" << b.dump();
  auto& other = a["governance"]["pauses"] == 1 ? b : a;
  EXPECT_GE(other["governance"]["remotePauses"].get<int>(), 1) << other.dump();
  EXPECT_GT(other["stats"]["done"].get<int>(), 0) << "both replicas took part";
}

TEST_F(Governance, EightWorkersInTwoSystemsNeverEscalateARateLimitedApisPenalty) {
  // The API: 40 calls in every second; a violation costs a 1 s cessation, doubled by every call
  // made during it (calls within 200 ms of its start were already on the wire: refused, not escalated).
  api_server_options o;
  o.limits.limit = 40;
  o.limits.per = 1000ms;
  o.limits.penalty = 1000ms;
  o.limits.max_penalty = 60000ms;
  o.limits.grace = 200ms;
  api_server_thread api(o);
  node_ = std::make_unique<activator_process>(node("gov-a-" + sys));
  id = node_id(registry, "gov-a-" + sys);
  auto node_b = std::make_unique<activator_process>(node("gov-b-" + sys));
  auto id_b = node_id(registry, "gov-b-" + sys);
  nlohmann::json backoff = {{"backoff", {{"retryLimit", 10}}}};
  for (auto [node_id_, log] : {std::pair{id, "api-a.log"}, std::pair{id_b, "api-b.log"}}) {
    auto r = deploy_pool(node_id_, sys, "api", "api_caller", {{"url", api.call_url()}, {"log", (dir / log).string()}},
                         4, backoff);
    ASSERT_EQ(r.status, 200) << r.body;
  }
  const int n = 300;
  produce(n, nlohmann::json::object(), "api");
  auto settled = [&] {
    auto ok = read_api_successes(dir / "api-a.log");
    ok.merge(read_api_successes(dir / "api-b.log"));
    return ok.size() + shared_broker().queue_depth("dde.dead." + sys + ".api").value_or(0);
  };
  ASSERT_TRUE(wait_until([&] { return settled() >= std::size_t(n); }, long_wait)) << settled();
  auto stats = api.stats();
  EXPECT_EQ(stats.escalations, 0u) << to_json(stats).dump();
  EXPECT_GT(stats.limited, 0u) << "the pools did hit the limit: governance was exercised";
  EXPECT_GE(stats.ok, std::uint64_t(n) - shared_broker().queue_depth("dde.dead." + sys + ".api").value_or(0));
  int pauses = 0;
  for (auto node_id_ : {id, id_b})
    for (auto& p : pools_of(registry, node_id_, sys))
      if (p["id"] == sys + "/api") pauses += p["governance"]["pauses"].get<int>() + p["governance"]["remotePauses"].get<int>();
  EXPECT_GE(pauses, 2) << "both replicas paused";
}

TEST_F(Governance, SubPoolsCapEachKeyWhileOtherKeysGoOn) {
  node_ = std::make_unique<activator_process>(node("gov-" + sys));
  id = node_id(registry, "gov-" + sys);
  const int work_ms = 60;
  auto r = deploy_pool(id, sys, "echo", "echo_v1", {{"work_ms", work_ms}}, 6,
                       {{"subPools", {{"key", "service"}, {"capacity", {{"write", 1}}}, {"defaultCapacity", 3}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  const int n = 90;
  produce(n, {{"key_field", "service"}, {"keys", {"write", "read", "read"}}}, "echo");
  auto done = [&] { return read_timed(dir, "done-"); };
  ASSERT_TRUE(wait_until([&] { return done().size() >= std::size_t(n); }, long_wait));
  // Intervals [start, end) per key; the most that overlap at once must not pass the capacity.
  std::map<std::int64_t, std::int64_t> end_of;
  for (auto& d : done()) end_of[d.seq] = d.us;
  std::map<std::string, std::vector<std::pair<std::int64_t, int>>> events;
  for (auto& l : read_echo_logs(dir)) {
    auto key = l.seq % 3 == 0 ? "write" : "read";
    ASSERT_TRUE(end_of.count(l.seq)) << l.seq;
    events[key].push_back({l.time_us, +1});
    events[key].push_back({end_of[l.seq], -1});
  }
  std::map<std::string, int> most;
  for (auto& [key, ev] : events) {
    std::sort(ev.begin(), ev.end());  // an end (-1) sorts before a start at the same microsecond
    int now = 0;
    for (auto& [t, d] : ev) most[key] = std::max(most[key], now += d);
  }
  EXPECT_EQ(most["write"], 1);
  EXPECT_EQ(most["read"], 3) << "reads ran three at a time while writes waited for their one place";
  auto p = pool("echo");
  EXPECT_EQ(p["subPoolState"]["write"]["capacity"], 1) << p.dump();
}

}  // namespace
}  // namespace dde::test
