// ddectl against a real dde-registry process: output and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>

#include "registry_test_process.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;
using dde::test::bin_path;
using dde::test::child_process;
using dde::test::fresh_dir;

/// Runs ddectl; its exit status, standard output and standard error.
struct ctl_result {
  int exit = -1;
  std::string out, err;
};

ctl_result ddectl(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null") {
  auto dir = fresh_dir("ddectl");
  // sh keeps stderr apart from stdout (child_process sends both to its log file).
  std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" <\"$STDIN_FILE\" 2>\"$ERR_FILE\"",
                                   bin_path("ddectl").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  child_process proc(argv, dir / "out.txt",
                     {{"STDIN_FILE", stdin_file}, {"ERR_FILE", (dir / "err.txt").string()}});
  auto status = proc.wait_exit(30s);
  ctl_result r;
  if (status && WIFEXITED(*status)) r.exit = WEXITSTATUS(*status);
  r.out = proc.log();
  std::ifstream err(dir / "err.txt");
  r.err.assign(std::istreambuf_iterator<char>(err), {});
  return r;
}

TEST(RegistryCtl, DdectlPrintsAnswersAsJsonAndExitsWithTheDocumentedCodes) {
  registry_process registry;
  fake_node node(registry.port(), named("node-a"));
  ASSERT_TRUE(node.wait_registered());
  const std::vector<std::string> at = {"--registry", registry.url()};
  auto run = [&](std::vector<std::string> args, const std::string& stdin_file = "/dev/null") {
    args.insert(args.begin(), at.begin(), at.end());
    return ddectl(args, stdin_file);
  };

  auto list = run({"list"});
  EXPECT_EQ(list.exit, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)[0]["bootstrapperId"], node.id());
  EXPECT_NE(list.out.find("\n  {\n    \"bootstrapperId\""), std::string::npos) << "pretty-printed:\n"
                                                                               << list.out;

  auto file = fresh_dir("ddectl-body") / "deploy.json";
  std::ofstream(file) << thesis_deploy_body(node.id()).dump(2);
  auto deployed = run({"deploy", file.string()});
  EXPECT_EQ(deployed.exit, 0) << deployed.err;
  EXPECT_EQ(json::parse(deployed.out)["isolateName"], "consumer");

  auto from_flags = run({"deploy", "--bootstrapper", node.id(), "--mqs", "ws://127.0.0.1:42043/mqs",
                         "--system", "sampleSystem", "--isolate", "printer", "--uri", "/w/libprinter.so",
                         "--workers", "localhost,localhost", "--credits", "2"});
  EXPECT_EQ(from_flags.exit, 0) << from_flags.err;
  auto again = run({"deploy", "-"}, file.string());
  EXPECT_EQ(again.exit, 1);
  EXPECT_EQ(again.err, "ddectl: pool \"sampleSystem/consumer\" already runs on this node (HTTP 409)\n");

  auto shown = run({"show", node.id()});
  EXPECT_EQ(shown.exit, 0) << shown.err;
  auto pools = json::parse(shown.out)["sampleSystem"];
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[1]["id"], "sampleSystem/printer");
  EXPECT_EQ(pools[1]["workersCount"], 2);
  EXPECT_EQ(pools[1]["credits"], 2);

  auto bad = run({"deploy", "--bootstrapper", node.id(), "--mqs", "ws://127.0.0.1:42043/mqs", "--system", "s",
                  "--isolate", "c", "--uri", "/w/x.so", "--router", "fastest"});
  EXPECT_EQ(bad.exit, 1);
  EXPECT_EQ(bad.err,
            "ddectl: unknown routerType \"fastest\": use roundRobin, random, broadcast, smallestMailbox, "
            "consistentHash, scatterGather, tailChopping, or the path of a custom router .so (HTTP 400)\n");
  EXPECT_EQ(run({"show", "12133208"}).exit, 1);

  auto down = run({"shutdown", node.id(), "sampleSystem", "printer"});
  EXPECT_EQ(down.exit, 0) << down.err;
  EXPECT_EQ(json::parse(down.out), json::object());
  EXPECT_EQ(node.pools()["sampleSystem"].size(), 1u);

  auto health = run({"health"});
  EXPECT_EQ(health.exit, 0);
  EXPECT_EQ(json::parse(health.out)["nodes"], 1);

  auto usage = run({"shutdown", node.id()});
  EXPECT_EQ(usage.exit, 2);
  EXPECT_EQ(usage.err, "ddectl: usage: ddectl shutdown ID SYSTEM [ISOLATE] (see ddectl shutdown --help)\n");
  EXPECT_EQ(ddectl({"--help"}).exit, 0);

  registry.stop();
  auto unreachable = run({"list"});
  EXPECT_EQ(unreachable.exit, 3);
  EXPECT_EQ(unreachable.err.rfind("ddectl: cannot reach the registry at " + registry.url() + ": ", 0), 0u)
      << unreachable.err;
}

}  // namespace
}  // namespace dde::registry::test
