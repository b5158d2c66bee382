// The routers Akka users know (issue 10), on real deployments: smallest-mailbox sends nothing to a
// busy worker while another is idle; consistent-hash keeps every key on one worker.
#include <fstream>
#include <map>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

class Routers : public Cluster {
 protected:
  void SetUp() override {
    Cluster::SetUp();
    node_ = std::make_unique<activator_process>(node("rt-" + sys));
    id = node_id(registry, "rt-" + sys);
  }
  void produce(const std::string& to, int n, nlohmann::json extra_args = nlohmann::json::object()) {
    nlohmann::json args = {{"to", sys + "/" + to}, {"count", n}};
    args.update(extra_args);
    auto r = deploy(deploy_body(id, mqs.url(), sys, "producer-" + to, "producer", args));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  /// "SEQ MICROS" of every message done (done-*.log of the echo workers).
  std::map<std::int64_t, std::int64_t> done_times() {
    std::map<std::int64_t, std::int64_t> out;
    std::error_code ec;
    for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().filename().string().rfind("done-", 0) != 0) continue;
      std::ifstream in(entry.path());
      std::int64_t seq = 0, us = 0;
      while (in >> seq >> us) out[seq] = us;
    }
    return out;
  }
  std::string sys = unique_system("rt");
  std::string id;
  std::unique_ptr<activator_process> node_;
};

TEST_F(Routers, SmallestMailboxSendsNothingToABusyWorkerWhileAnotherIsIdle) {
  // Seq 0 takes 5 s, the others 5 ms, one every 50 ms: the worker handling seq 0 is busy while the
  // other is idle whenever a message arrives. Round-robin would queue every other one behind seq 0.
  auto r = deploy_pool(id, sys, "echo", "echo_v1", {{"work_ms", 5}, {"slow_on", {0}}, {"slow_ms", 5000}}, 2,
                       {{"routerType", "smallestMailbox"}, {"credits", 8}});
  ASSERT_EQ(r.status, 200) << r.body;
  const int n = 50;
  produce("echo", n, {{"rate", 20}});
  ASSERT_TRUE(wait_until([&] { return done_times().size() >= std::size_t(n); }, long_wait));
  auto done = done_times();
  auto log = read_echo_logs(dir);
  std::string slow_worker;
  for (auto& l : log)
    if (l.seq == 0) slow_worker = l.worker;
  ASSERT_FALSE(slow_worker.empty());
  for (auto& l : log) {
    if (l.seq == 0) continue;
    EXPECT_LT(done[l.seq], done[0]) << "seq " << l.seq << " waited for the busy worker";
    EXPECT_NE(l.worker, slow_worker) << "seq " << l.seq << " went to the busy worker";
  }
}

TEST_F(Routers, ConsistentHashKeepsEveryKeyOnOneWorker) {
  auto r = deploy_pool(id, sys, "echo", "echo_v1", nlohmann::json::object(), 4,
                       {{"routerType", "consistentHash"}, {"hashKey", "user"}});
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json users = nlohmann::json::array();
  for (int u = 0; u < 40; ++u) users.push_back("user-" + std::to_string(u));
  const int n = 10000;
  produce("echo", n, {{"key_field", "user"}, {"keys", users}});
  ASSERT_TRUE(wait_until([&] { return read_echo_logs(dir).size() >= std::size_t(n); }, long_wait));
  std::map<std::string, std::set<std::string>> workers_of;
  std::set<std::string> all_workers;
  for (auto& l : read_echo_logs(dir)) {
    workers_of[users[std::size_t(l.seq) % users.size()].get<std::string>()].insert(l.worker);
    all_workers.insert(l.worker);
  }
  EXPECT_EQ(workers_of.size(), users.size());
  for (auto& [user, workers] : workers_of) EXPECT_EQ(workers.size(), 1u) << user << " went to several workers";
  EXPECT_EQ(all_workers.size(), 4u) << "the keys spread over the pool";
}

}  // namespace
}  // namespace dde::test
