// ddectl against a real dde-registry process: output and exit codes.
#include <gtest/gtest.h>

#include <fstream>

#include "registry_test_process.hpp"

namespace dde::registry::test {
namespace {

using namespace std::chrono_literals;
using dde::test::fresh_dir;
using dde::test::tool_result;

tool_result ddectl(const std::vector<std::string>& args, const std::string& stdin_file = "/dev/null") {
  return dde::test::run_tool("ddectl", args, stdin_file);
}

TEST(RegistryCtl, DdectlPrintsTablesOrJsonAndExitsWithTheDocumentedCodes) {
  registry_process registry;
  fake_node node(registry.port(), named("node-a"));
  ASSERT_TRUE(node.wait_registered());
  const std::vector<std::string> at = {"--registry", registry.url()};
  auto run = [&](std::vector<std::string> args, const std::string& stdin_file = "/dev/null") {
    args.insert(args.begin(), at.begin(), at.end());
    return ddectl(args, stdin_file);
  };

  auto table = run({"list"});
  EXPECT_EQ(table.exit, 0) << table.err;
  EXPECT_EQ(table.out.rfind("ID         NAME    ACTIVATOR", 0), 0u) << "a table for people by default:\n"
                                                                    << table.out;
  EXPECT_NE(table.out.find("\n" + node.id() + "  node-a  ws://"), std::string::npos) << table.out;
  auto list = run({"-o", "json", "list"});
  EXPECT_EQ(list.exit, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)[0]["bootstrapperId"], node.id());
  EXPECT_NE(list.out.find("\n  {\n    \"bootstrapperId\""), std::string::npos) << "pretty-printed:\n"
                                                                               << list.out;

  auto file = fresh_dir("ddectl-body") / "deploy.json";
  std::ofstream(file) << thesis_deploy_body(node.id()).dump(2);
  auto deployed = run({"deploy", file.string()});
  EXPECT_EQ(deployed.exit, 0) << deployed.err;
  EXPECT_EQ(deployed.out, "deployed pool sampleSystem/consumer\n");

  auto from_flags = run({"deploy", "--bootstrapper", node.id(), "--mqs", "ws://127.0.0.1:42043/mqs",
                         "--system", "sampleSystem", "--isolate", "printer", "--uri", "/w/libprinter.so",
                         "--workers", "localhost,localhost", "--credits", "2"});
  EXPECT_EQ(from_flags.exit, 0) << from_flags.err;
  auto again = run({"deploy", "-"}, file.string());
  EXPECT_EQ(again.exit, 1);
  EXPECT_EQ(again.err, "ddectl: pool \"sampleSystem/consumer\" already runs on this node (HTTP 409)\n");

  // ask: the registry is asked first where the pool runs. An unknown pool is an error before any MQS
  // is reached (which would declare its queues); a known one goes on to its MQS (here: none listens).
  auto unknown = run({"ask", "nosys/nopool", "{}", "--mqs", "ws://127.0.0.1:1/mqs"});
  EXPECT_EQ(unknown.exit, 1) << unknown.err;
  EXPECT_EQ(unknown.err,
            "ddectl: no pool nosys/nopool is deployed on the 1 node(s) the registry knows; nothing was sent "
            "(ddectl list and ddectl show ID list the pools; --no-registry sends anyway)\n");
  auto wrong_mode = run({"ask", "sampleSystem/printer", "--mode", "at-most-once"});
  EXPECT_EQ(wrong_mode.exit, 1) << wrong_mode.err;
  EXPECT_NE(wrong_mode.err.find("pool sampleSystem/printer is at-least-once (on node " + node.id() +
                                "), not "
                                "at-most-once"),
            std::string::npos)
      << wrong_mode.err;
  auto known =
      run({"ask", "sampleSystem/printer", "{}", "--mqs", "ws://127.0.0.1:1/mqs", "--timeout-ms", "5000"});
  EXPECT_EQ(known.exit, 3) << known.err;
  EXPECT_EQ(known.err.rfind("ddectl: cannot reach the MQS at ws://127.0.0.1:1/mqs", 0), 0u) << known.err;
  auto unchecked = run({"ask", "nosys/nopool", "--no-registry", "--mqs", "ws://127.0.0.1:1/mqs"});
  EXPECT_EQ(unchecked.exit, 3) << "--no-registry goes straight to the MQS: " << unchecked.err;
  auto no_registry = ddectl({"ask", "a/b", "--registry", "http://127.0.0.1:1"});
  EXPECT_EQ(no_registry.exit, 3) << no_registry.err;
  EXPECT_EQ(
      no_registry.err.rfind("ddectl: cannot reach the registry at http://127.0.0.1:1 to find pool a/b", 0),
      0u)
      << no_registry.err;

  auto shown_table = run({"show", node.id()});
  EXPECT_EQ(shown_table.exit, 0) << shown_table.err;
  EXPECT_NE(shown_table.out.find("\nsampleSystem/printer  "), std::string::npos) << shown_table.out;
  auto shown = run({"show", node.id(), "-o", "json"});
  EXPECT_EQ(shown.exit, 0) << shown.err;
  auto by_name = run({"-o", "json", "show", "node-a"});
  EXPECT_EQ(by_name.exit, 0) << "a node by its name as well as its id: " << by_name.err;
  EXPECT_EQ(json::parse(by_name.out), json::parse(shown.out));
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
  EXPECT_EQ(down.out, "stopped pool sampleSystem/printer\n");
  EXPECT_EQ(node.pools()["sampleSystem"].size(), 1u);

  auto health = run({"health", "-o", "json"});
  EXPECT_EQ(health.exit, 0);
  EXPECT_EQ(json::parse(health.out)["nodes"], 1);
  EXPECT_EQ(run({"health"}).out.rfind("ok: 1 node(s) connected, up ", 0), 0u);

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

TEST(RegistryCtl, ARegistryOnIpv6LoopbackIsReachedByBracketedUrls) {
  // URLs are parsed by a library, so [::1] is a host and the port after it a port,
  // for ddectl (http) and for a node (ws) alike.
  registry_process registry({"--listen", "::1"});
  auto url = "http://[::1]:" + std::to_string(registry.port());
  auto dir = fresh_dir("v6-node");
  dde::test::child_process node(
      {dde::test::bin_path("dde-activator").string(), "--registry",
       "ws://[::1]:" + std::to_string(registry.port()) + "/registry", "--listen", "::1", "--port",
       std::to_string(dde::test::free_port()), "--name", "v6-node", "--log-dir", dir.string()},
      dir / "activator.log");
  tool_result listed;
  ASSERT_TRUE(dde::test::wait_until(
      [&] {
        listed = ddectl({"--registry", url, "list", "-o", "json"});
        return listed.exit == 0 && listed.out.find("\"v6-node\"") != std::string::npos;
      },
      30s))
      << listed.err << listed.out << node.log();
  auto nodes = json::parse(listed.out);
  EXPECT_EQ(nodes[0]["activator"].get<std::string>().rfind("ws://[::1]:", 0), 0u) << listed.out;
  auto health = ddectl({"--registry", url + "/", "health"});
  EXPECT_EQ(health.exit, 0) << health.err;
}

}  // namespace
}  // namespace dde::registry::test
