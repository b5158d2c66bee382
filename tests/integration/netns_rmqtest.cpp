// Two DDE nodes in two network namespaces with their own addresses, joined by a veth pair: node A
// (broker, MQS, registry, activator) at 10.213.7.1, node B (activator) at 10.213.7.2. A pool on A
// has a remote worker on B. Needs root and `ip netns`; skipped, visibly, without them.
//
// The namespaces are created by this test and deleted at exit. The test process enters node A's
// namespace in main(), before any thread exists, so everything it starts runs there.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>

#include "cluster.hpp"

namespace dde::test {
namespace {

std::string ns_a, ns_b, skip_reason;
const std::string addr_a = "10.213.7.1", addr_b = "10.213.7.2";

bool sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

void teardown() {
  for (auto& ns : {ns_a, ns_b}) {
    if (ns.empty()) continue;
    // Everything left in the namespaces (epmd, say) but this process, which lives in one of them.
    sh("ip netns pids " + ns + " | grep -vx " + std::to_string(::getpid()) + " | xargs -r kill -9");
    sh("ip netns del " + ns);
  }
}

/// Creates the namespaces and the link; on success enters node A's namespace.
void setup() {
  if (::geteuid() != 0) return void(skip_reason = "needs root to create network namespaces");
  if (!sh("command -v ip")) return void(skip_reason = "needs iproute2 (ip netns)");
  auto id = std::to_string(::getpid());
  ns_a = "ddeA" + id;
  ns_b = "ddeB" + id;
  std::string va = "vA" + id, vb = "vB" + id;
  bool ok = sh("ip netns add " + ns_a) && sh("ip netns add " + ns_b) &&
            sh("ip link add " + va + " netns " + ns_a + " type veth peer name " + vb + " netns " + ns_b) &&
            sh("ip -n " + ns_a + " addr add " + addr_a + "/24 dev " + va) &&
            sh("ip -n " + ns_b + " addr add " + addr_b + "/24 dev " + vb) &&
            sh("ip -n " + ns_a + " link set lo up") && sh("ip -n " + ns_b + " link set lo up") &&
            sh("ip -n " + ns_a + " link set " + va + " up") &&
            sh("ip -n " + ns_b + " link set " + vb + " up");
  if (!ok) {
    teardown();
    return void(skip_reason = "cannot create network namespaces here (ip netns add / veth failed)");
  }
  int fd = ::open(("/var/run/netns/" + ns_a).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
    teardown();
    return void(skip_reason = "cannot enter the namespace");
  }
  ::close(fd);
}

TEST(NetworkNamespaces, TwoNodesWithTheirOwnAddressesShareAPool) {
  if (!skip_reason.empty()) GTEST_SKIP() << skip_reason;
  auto dir = fresh_dir("netns");
  rabbitmq_node broker("netns");
  broker.start();
  auto mqs = start_mqs(broker, dir, 8);
  registry_process registry;
  registry.port = free_port();
  registry.proc = std::make_unique<child_process>(
      std::vector<std::string>{bin_path("dde-registry").string(), "--listen", addr_a, "--port",
                               std::to_string(registry.port)},
      dir / "registry.log");
  std::string base = "http://" + addr_a + ":" + std::to_string(registry.port);
  ASSERT_TRUE(wait_until([&] { return rest("GET", base + "/registry/health").status == 200; }, 20s))
      << registry.proc->log();
  std::string registry_ws = "ws://" + addr_a + ":" + std::to_string(registry.port) + "/registry";
  auto activator = [&](const std::string& ns, const std::string& addr, const std::string& name) {
    std::filesystem::create_directories(dir / name);
    std::vector<std::string> argv{"ip",
                                  "netns",
                                  "exec",
                                  ns,
                                  bin_path("dde-activator").string(),
                                  "--registry",
                                  registry_ws,
                                  "--listen",
                                  addr,
                                  "--port",
                                  "42042",
                                  "--name",
                                  name,
                                  "--log-dir",
                                  (dir / name).string(),
                                  "--orphan-timeout-ms",
                                  "10000"};
    return std::make_unique<child_process>(argv, dir / (name + ".log"));
  };
  auto a = activator(ns_a, addr_a, "node-a");
  auto b = activator(ns_b, addr_b, "node-b");
  // Each node is seen at its own address, and both use the thesis's activator port.
  nlohmann::json list;
  ASSERT_TRUE(wait_until(
      [&] {
        list = rest("GET", base + "/registry/system/list").json;
        return list.is_array() && list.size() == 2;
      },
      30s))
      << a->log() << b->log();
  std::map<std::string, std::string> ip_of, id_of;
  for (auto& n : list) {
    ip_of[n["name"]] = n["ip"];
    id_of[n["name"]] = n["bootstrapperId"];
  }
  EXPECT_EQ(ip_of["node-a"], addr_a);
  EXPECT_EQ(ip_of["node-b"], addr_b);

  // A pool on A with one local worker and one on B (its Isolate Deployer at B's address).
  auto deploy = [&](const nlohmann::json& body) {
    return rest("POST", base + "/registry/deploy", body.dump());
  };
  auto consumer = deploy_body(id_of["node-a"], mqs.url(), "netns", "consumer", "consumer",
                              {{"stats_dir", dir}, {"log_dir", dir}},
                              {"localhost", "ws://" + addr_b + ":42042/activator"});
  auto r = deploy(consumer);
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_until(
      [&] {
        auto show = rest("GET", base + "/registry/system/" + id_of["node-a"]).json;
        if (!show.contains("netns")) return false;
        for (auto& w : show["netns"][0]["workers"])
          if (w["state"] != "running") return false;
        return true;
      },
      30s));
  r = deploy(deploy_body(id_of["node-a"], mqs.url(), "netns", "producer", "producer",
                         {{"to", "netns/consumer"}, {"count", 2000}}));
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 2000; }, 120s));
  EXPECT_TRUE(read_seq_logs(dir).missing(2000).empty());
  // The sequence logs (written before each ack), not the stats files (rewritten every 200 ms).
  auto per_process = read_seq_logs(dir).per_file;
  ASSERT_EQ(per_process.size(), 2u) << "the host on A and the activator on B";
  for (auto& [file, lines] : per_process) EXPECT_GT(lines, 0u) << file;
}

}  // namespace
}  // namespace dde::test

int main(int argc, char** argv) {
  dde::test::setup();
  std::atexit(dde::test::teardown);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  return rc;
}
