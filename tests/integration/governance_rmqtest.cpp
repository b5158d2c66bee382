// Rate-limit governance on a real cluster: a worker that reports a rate limit
// (`backoff(delay)` or `throw dde::rate_limited`) pauses its whole pool, the message is tried again
// after the delay, up to the retry limit, then dead-lettered with its reason; per-key sub-pools cap
// how many messages of one key are in flight.
#include <ctime>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

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

/// A daemon log line's time ("2026-12-03 20:19:50.640 ...", local time, as spdlog writes it) in epoch
/// microseconds, rounded down to the millisecond as printed; nullopt when the line starts otherwise.
std::optional<std::int64_t> log_line_us(const std::string& line) {
  std::tm tm{};
  std::istringstream in(line);
  int ms = 0;
  char dot = 0;
  if (!(in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S") >> dot >> ms) || dot != '.') return std::nullopt;
  tm.tm_isdst = -1;
  return std::int64_t(std::mktime(&tm)) * 1000000 + std::int64_t(ms) * 1000;
}

/// The api_caller pools of two systems against the test API: where each call started (the callers'
/// "SEQ CALL US" lines), what the API made of it (its call log), and when each pool paused (its
/// router's "no message starts for X ms" lines, logged once the pause holds).
struct api_run {
  struct call {
    std::int64_t us;
    std::string seq, caller, why;
  };
  struct pause {
    std::int64_t us, ms;
  };
  std::vector<call> calls;
  std::map<std::string, std::multimap<std::string, std::int64_t>> starts;  ///< caller -> seq -> start
  std::map<std::string, std::vector<pause>> pauses;                        ///< caller -> its pool's pauses

  api_run(const std::filesystem::path& dir, const std::map<std::string, std::filesystem::path>& host_logs) {
    std::ifstream in(dir / "calls.log");
    for (std::string line; std::getline(in, line);) {
      std::istringstream f(line);
      call c;
      std::string status, id, retry;
      f >> c.us >> status >> id >> c.seq >> c.caller >> retry >> c.why;
      calls.push_back(c);
    }
    for (auto& [caller, host_log] : host_logs) {
      std::ifstream starts_in(dir / ("api-" + caller + ".log"));
      std::int64_t seq = 0, us = 0;
      std::string what;
      while (starts_in >> seq >> what >> us)
        if (what == "CALL") starts[caller].emplace(std::to_string(seq), us);
      std::ifstream host(host_log);
      for (std::string line; std::getline(host, line);) {
        auto at = line.find("no message starts for ");
        auto us_at = log_line_us(line);
        if (at != std::string::npos && us_at)
          pauses[caller].push_back({*us_at, std::atoll(line.c_str() + at + 22)});
      }
    }
  }

  /// How long after its pool's pause line a call's start may be logged though its worker passed the
  /// gate before the pause: the worker logs its start in on_receive, after the gate let it in, and a
  /// loaded machine can keep that thread off a core for several milliseconds in between (two CPU
  /// burners beside the suite showed one 1 ms into the pause). Log times are whole ms besides.
  static constexpr std::int64_t passed_the_gate_us = 50000;

  /// Calls that a worker started while its pool's pause held.
  std::vector<std::string> starts_during_pauses() const {
    std::vector<std::string> out;
    for (auto& [caller, by_seq] : starts)
      for (auto& [seq, us] : by_seq)
        for (auto& p : pauses.count(caller) ? pauses.at(caller) : std::vector<pause>{})
          if (us >= p.us + passed_the_gate_us && us < p.us + p.ms * 1000 - 1000) {
            std::string what = caller;
            what += " started seq " + seq;
            what += " " + std::to_string((us - p.us) / 1000) + " ms into its pool's pause of ";
            what += std::to_string(p.ms) + " ms";
            out.push_back(std::move(what));
          }
    return out;
  }

  /// Every call the API took as made during a cessation, judged: a call is the machine's, not
  /// DDE's, when it started before its pool knew of the cessation (its first pause after the
  /// violation): it was on its way, only later than the API's grace. Returns {on their way, DDE's}.
  std::pair<std::vector<std::string>, std::vector<std::string>> calls_during_cessations() const {
    std::pair<std::vector<std::string>, std::vector<std::string>> out;
    std::int64_t violation = 0;
    for (auto& c : calls) {
      if (c.why == "violation") violation = c.us;
      if (c.why != "during-cessation") continue;
      std::optional<std::int64_t> knew, started;
      if (pauses.count(c.caller))
        for (auto& p : pauses.at(c.caller))
          if (p.us >= violation - 1000 && (!knew || p.us < *knew)) knew = p.us;
      if (starts.count(c.caller)) {
        auto [from, to] = starts.at(c.caller).equal_range(c.seq);
        for (auto it = from; it != to; ++it)
          if (it->second <= c.us && (!started || it->second > *started)) started = it->second;
      }
      auto ms = [](std::int64_t us) { return std::to_string(us / 1000) + " ms"; };
      auto what = c.caller + "'s seq " + c.seq + " reached the API " + ms(c.us - violation) +
                  " after the violation; started at " +
                  (started ? ms(*started - violation) : "(none logged)") + ", its pool paused at " +
                  (knew ? ms(*knew - violation) : "(never)");
      // A start logged just after the pause line may have passed the gate before it (see above).
      (started && (!knew || *started < *knew + passed_the_gate_us) ? out.first : out.second).push_back(what);
    }
    return out;
  }
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines) out += "  " + l + "\n";
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
  void produce(int n, nlohmann::json extra_args = nlohmann::json::object(),
               const std::string& to = "faulty") {
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
  deploy_faulty({{"backoff_on", {40}}, {"backoff_times", 2}, {"backoff_ms", pause.count()}},
                nlohmann::json::object(), 4);
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
          << "seq " << s.seq << " started " << (s.us - b.us) / 1000 << " ms into a pause of " << pause.count()
          << " ms";
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
  ASSERT_TRUE(wait_until(
      [&] { return (dead = shared_broker().get("dde.dead." + sys + ".faulty")).has_value(); }, 60s));
  auto e = nlohmann::json::parse(*dead);
  EXPECT_EQ(e["body"]["seq"], 7) << *dead;
  EXPECT_EQ(e["deadLetter"]["attempts"], 3) << *dead;
  EXPECT_EQ(e["deadLetter"]["pool"], sys + "/faulty");
  EXPECT_NE(e["deadLetter"]["reason"].get<std::string>().find("retry limit 2"), std::string::npos) << *dead;
  EXPECT_NE(e["deadLetter"]["reason"].get<std::string>().find("asked to back off on 7"), std::string::npos)
      << *dead;
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
  for (auto& p : pools_of(registry, id, sys))
    if (p["id"] == sys + "/faulty") a = p;
  for (auto& p : pools_of(registry, id_b, sys))
    if (p["id"] == sys + "/faulty") b = p;
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
  o.log_calls = (dir / "calls.log").string();
  api_server_thread api(o);
  node_ = std::make_unique<activator_process>(node("gov-a-" + sys));
  id = node_id(registry, "gov-a-" + sys);
  auto node_b = std::make_unique<activator_process>(node("gov-b-" + sys));
  auto id_b = node_id(registry, "gov-b-" + sys);
  nlohmann::json backoff = {{"backoff", {{"retryLimit", 10}}}};
  for (auto [node_id_, caller] : {std::pair{id, "a"}, std::pair{id_b, "b"}}) {
    nlohmann::json args = {{"url", api.call_url()},
                           {"log", (dir / ("api-" + std::string(caller) + ".log")).string()},
                           {"headers", {{"X-Caller", caller}}}};
    auto r = deploy_pool(node_id_, sys, "api", "api_caller", args, 4, backoff);
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
  api_run run(
      dir, {{"a", dir / ("gov-a-" + sys) / (sys + ".log")}, {"b", dir / ("gov-b-" + sys) / (sys + ".log")}});
  for (auto caller : {"a", "b"})
    EXPECT_TRUE(!run.starts[caller].empty() && !run.pauses[caller].empty())
        << caller << ": the logs of its calls' starts and of its pauses are what the checks below read";
  EXPECT_EQ(run.starts_during_pauses(), std::vector<std::string>{})
      << "no message starts while its pool is paused";
  // No worker calls once its pool knows of a cessation. A call that the loaded machine kept on its way
  // past the API's grace is counted during the cessation (and may escalate it); those are reported.
  auto [on_their_way, dde_made] = run.calls_during_cessations();
  EXPECT_EQ(on_their_way.size() + dde_made.size(), stats.calls_during_cessation) << to_json(stats).dump();
  EXPECT_EQ(dde_made, std::vector<std::string>{}) << "calls started after their pool knew of a cessation";
  EXPECT_LE(stats.escalations, on_their_way.size()) << to_json(stats).dump();
  if (!on_their_way.empty())
    std::cout << "[ NOTE ] calls that were on their way when a cessation began, later than the API's grace:\n"
              << joined(on_their_way);
  EXPECT_GT(stats.limited, 0u) << "the pools did hit the limit: governance was exercised";
  EXPECT_GE(stats.ok, std::uint64_t(n) - shared_broker().queue_depth("dde.dead." + sys + ".api").value_or(0));
  int pauses = 0;
  for (const auto& node_id_ : {id, id_b})
    for (auto& p : pools_of(registry, node_id_, sys))
      if (p["id"] == sys + "/api")
        pauses += p["governance"]["pauses"].get<int>() + p["governance"]["remotePauses"].get<int>();
  EXPECT_GE(pauses, 2) << "both replicas paused";
}

TEST_F(Governance, SubPoolsCapEachKeyWhileOtherKeysGoOn) {
  node_ = std::make_unique<activator_process>(node("gov-" + sys));
  id = node_id(registry, "gov-" + sys);
  const int work_ms = 60;
  auto r =
      deploy_pool(id, sys, "echo", "echo_v1", {{"work_ms", work_ms}}, 6,
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
