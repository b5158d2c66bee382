// Partitioned pools on real deployments: replicas of one pool on several nodes share its partitions,
// and the messages of one key are handled in the order they were sent, through a replica killed
// (kill -9) and a replica added while they flow; none is lost.
#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <set>

#include "cluster_fixture.hpp"
#include "dde/core/stable_hash.hpp"

namespace dde::test {
namespace {

class Partitions : public Cluster {
 protected:
  /// The pool spec's partitions: `count` partitions by body field "user".
  static nlohmann::json partitioned(int count) {
    return {{"partitions", {{"count", count}, {"key", "user"}}}};
  }

  std::set<std::int64_t> handled() const {
    std::set<std::int64_t> seqs;
    for (auto& l : read_echo_logs(dir)) seqs.insert(l.seq);
    return seqs;
  }
  std::string sys = unique_system("pt");
};

TEST_F(Partitions, EachKeyIsHandledInSendOrderAcrossReplicasThroughAKillAndAnAddedReplica) {
  std::vector<std::unique_ptr<activator_process>> nodes;
  std::vector<std::string> ids;
  for (auto name : {"pt-a-", "pt-b-", "pt-c-"}) {
    nodes.push_back(std::make_unique<activator_process>(node(name + sys)));
    ids.push_back(node_id(registry, name + sys));
  }
  // The producer outruns the pool (each message takes 2 ms), so a backlog waits in the broker, the
  // replicas have messages in hand when one is killed, and without partitions consecutive messages
  // of a key would be handled by several replicas at once.
  const int partitions = 16, keys = 1000, n = 100000;
  const nlohmann::json work = {{"work_ms", 2}};
  for (auto& id : ids) {
    auto r = deploy_pool(id, sys, "echo", "echo_v1", work, 2, partitioned(partitions));
    ASSERT_EQ(r.status, 200) << r.body;
  }
  nlohmann::json users = nlohmann::json::array();
  for (int u = 0; u < keys; ++u) users.push_back("user-" + std::to_string(u));
  auto r = deploy(deploy_body(ids[0], mqs.url(), sys, "producer", "producer",
                              {{"to", sys + "/echo"}, {"count", n}, {"key_field", "user"}, {"keys", users}}));
  ASSERT_EQ(r.status, 200) << r.body;

  // A third of the way: kill -9 the replica on the second node (its activator starts it again).
  ASSERT_TRUE(wait_until([&] { return handled().size() >= std::size_t(n / 3); }, long_wait));
  int pid = pools_of(registry, ids[1], sys).at(0).value("pid", -1);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // Two thirds of the way: a fourth replica on a fourth node.
  ASSERT_TRUE(wait_until([&] { return handled().size() >= std::size_t(2 * n / 3); }, long_wait));
  nodes.push_back(std::make_unique<activator_process>(node("pt-d-" + sys)));
  ids.push_back(node_id(registry, "pt-d-" + sys));
  r = deploy_pool(ids[3], sys, "echo", "echo_v1", work, 2, partitioned(partitions));
  ASSERT_EQ(r.status, 200) << r.body;

  ASSERT_TRUE(wait_until([&] { return handled().size() >= std::size_t(n); }, long_wait))
      << handled().size() << " of " << n << " handled";
  auto seqs = handled();
  EXPECT_EQ(seqs.size(), std::size_t(n)) << "none lost";
  EXPECT_EQ(*seqs.begin(), 0);
  EXPECT_EQ(*seqs.rbegin(), n - 1);
  EXPECT_EQ(unexplained_duplicates(read_echo_logs(dir)), 0u) << "a second handling only of a redelivery";

  // Per key, the messages in the order they were handled (by wall clock, across processes; within
  // one process in the order it logged them): a message handled before is a redelivery and is
  // left out; the others come in the order they were sent.
  auto by_process = read_echo_logs_by_file(dir);
  struct handling {
    std::int64_t time_us, seq;
    std::size_t process, line;
  };
  std::map<std::int64_t, std::vector<handling>> by_key;
  std::size_t p = 0;
  std::map<std::string, std::size_t> per_process;
  for (auto& [file, lines] : by_process) {
    for (std::size_t i = 0; i < lines.size(); ++i)
      by_key[lines[i].seq % keys].push_back({lines[i].time_us, lines[i].seq, p, i});
    per_process[file] = lines.size();
    ++p;
  }
  int out_of_order = 0;
  for (auto& [key, hs] : by_key) {
    std::sort(hs.begin(), hs.end(), [](const handling& a, const handling& b) {
      return a.time_us != b.time_us   ? a.time_us < b.time_us
             : a.process != b.process ? a.process < b.process
                                      : a.line < b.line;
    });
    std::set<std::int64_t> seen;
    std::int64_t last = -1;
    for (auto& h : hs) {
      if (!seen.insert(h.seq).second) continue;
      if (h.seq <= last && out_of_order++ < 5)
        ADD_FAILURE() << "key " << key << ": seq " << h.seq << " handled after " << last;
      last = std::max(last, h.seq);
    }
  }
  EXPECT_EQ(out_of_order, 0);
  // Three replicas, the one started again after the kill, and the one added: five processes took part.
  EXPECT_GE(per_process.size(), 5u) << ::testing::PrintToString(per_process);
  for (auto& [file, count] : per_process)
    std::cout << "[ partitions ] " << file << ": " << count << " handled\n";
  // How evenly the keys spread over the partitions (each replica owns count / replicas of them).
  std::vector<int> keys_of(partitions, 0);
  for (auto& user : users) ++keys_of[dde::stable_hash(user.get<std::string>()) % partitions];
  auto [fewest, most] = std::minmax_element(keys_of.begin(), keys_of.end());
  std::cout << "[ partitions ] " << keys << " keys over " << partitions << " partitions: " << *fewest
            << " to " << *most << " keys each\n";
}

TEST_F(Partitions, APartitionedPoolIsRefusedWithAClearReasonWhenItsSpecContradictsItself) {
  auto a = std::make_unique<activator_process>(node("pt-x-" + sys));
  auto id = node_id(registry, "pt-x-" + sys);
  auto spec = partitioned(4);
  spec["routerType"] = "broadcast";
  auto r = deploy_pool(id, sys, "echo", "echo_v1", nlohmann::json::object(), 1, spec);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find(
                "a partitioned pool routes by its key: routerType broadcast cannot keep a key's messages in "
                "order; leave it out or make it consistentHash"),
            std::string::npos)
      << r.body;
  spec = partitioned(4);
  spec["deliveryMode"] = "at-most-once";
  r = deploy_pool(id, sys, "echo", "echo_v1", nlohmann::json::object(), 1, spec);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("a partitioned pool is at-least-once"), std::string::npos) << r.body;
  r = deploy_pool(id, sys, "echo", "echo_v1", nlohmann::json::object(), 1,
                  {{"partitions", {{"count", 0}, {"key", "u"}}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("partitions.count"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace dde::test
