// ddectl's command line: each command becomes the right REST call, and bad usage is an error.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "dde/registry/ctl_commands.hpp"

namespace dde::ctl {
namespace {

using json = nlohmann::json;

invocation parse(std::vector<std::string> args, const std::string& input = "") {
  std::istringstream in(input);
  return parse_invocation(args, in);
}

TEST(RegistryCtl, ListShowAndHealthAreGetsOnTheThesisPaths) {
  auto list = parse({"list"});
  ASSERT_TRUE(list.call) << list.error;
  EXPECT_EQ(list.call->method, "GET");
  EXPECT_EQ(list.call->path, "/registry/system/list");
  EXPECT_EQ(list.registry, "http://127.0.0.1:8000");
  EXPECT_EQ(parse({"show", "266393094"}).call->path, "/registry/system/266393094");
  EXPECT_EQ(parse({"show", "a/b c"}).call->path, "/registry/system/a%2Fb%20c");
  EXPECT_EQ(parse({"health"}).call->path, "/registry/health");
}

TEST(RegistryCtl, TheRegistryOptionMayComeBeforeOrAfterTheCommand) {
  EXPECT_EQ(parse({"--registry", "http://10.0.0.1:8000/", "list"}).registry, "http://10.0.0.1:8000");
  EXPECT_EQ(parse({"list", "--registry=http://10.0.0.2:8000"}).registry, "http://10.0.0.2:8000");
  auto https = parse({"--registry", "https://x", "--ca", "/etc/ca.pem", "list"});
  ASSERT_TRUE(https.call) << https.error;
  EXPECT_EQ(https.registry, "https://x");
  EXPECT_EQ(https.tls.ca_file, "/etc/ca.pem");
  auto other = parse({"--registry", "ftp://x", "list"});
  EXPECT_FALSE(other.call);
  EXPECT_EQ(other.error, "--registry must be an http:// or https:// URL, got \"ftp://x\"");
}

TEST(RegistryCtl, DeployFromOptionsBuildsTheThesisBody) {
  auto inv = parse({"deploy",
                    "--bootstrapper",
                    "266393094",
                    "--mqs",
                    "ws://127.0.0.1:42043/mqs",
                    "--system",
                    "sampleSystem",
                    "--isolate",
                    "consumer",
                    "--uri",
                    "/w/libconsumer.so",
                    "--workers",
                    "localhost, ws://127.0.0.1:42042/activator",
                    "--router",
                    "random",
                    "--hot-deployment",
                    "false",
                    "--args",
                    R"({"k": 1})",
                    "--credits",
                    "4",
                    "--delivery-mode",
                    "at-most-once"});
  ASSERT_TRUE(inv.call) << inv.error;
  EXPECT_EQ(inv.call->method, "POST");
  EXPECT_EQ(inv.call->path, "/registry/deploy");
  EXPECT_EQ(json::parse(inv.call->body),
            json({{"bootstrapperId", "266393094"},
                  {"action", "action.addIsolate"},
                  {"messageQueuingSystemServer", "ws://127.0.0.1:42043/mqs"},
                  {"isolateSystemName", "sampleSystem"},
                  {"isolateName", "consumer"},
                  {"uri", "/w/libconsumer.so"},
                  {"workersPaths", {"localhost", "ws://127.0.0.1:42042/activator"}},
                  {"routerType", "random"},
                  {"hotDeployment", false},
                  {"args", {{"k", 1}}},
                  {"credits", 4},
                  {"deliveryMode", "at-most-once"}}));
}

TEST(RegistryCtl, DeployFromStandardInputSendsTheBodyAsGiven) {
  std::string body = R"({"bootstrapperId": "1", "action": "action.addIsolate"})";
  auto inv = parse({"deploy", "-"}, body);
  ASSERT_TRUE(inv.call) << inv.error;
  EXPECT_EQ(inv.call->body, body);
  EXPECT_EQ(parse({"deploy", "-"}, "{oops").error, "standard input is not valid JSON");
}

TEST(RegistryCtl, BadUsageIsAnErrorWithoutACall) {
  auto error_of = [](std::vector<std::string> args) {
    auto inv = parse(std::move(args));
    EXPECT_FALSE(inv.call);
    return inv.error;
  };
  EXPECT_EQ(error_of({}),
            "missing command (list, show, status, deploy, apply, shutdown, restart, kill, migrate, health, "
            "dlq, ask)");
  EXPECT_EQ(error_of({"launch"}), "unknown command \"launch\" (see ddectl --help)");
  EXPECT_EQ(error_of({"show"}), "usage: ddectl show ID (see ddectl show --help)");
  EXPECT_EQ(error_of({"deploy", "--bootstrapper", "1"}), "deploy needs --mqs (or a FILE.json)");
  EXPECT_EQ(error_of({"deploy", "f.json", "--system", "s"}), "give a FILE.json or options, not both");
  EXPECT_EQ(error_of({"deploy", "/nonexistent/f.json"}), "cannot read /nonexistent/f.json");
  EXPECT_EQ(error_of({"migrate", "1", "s", "c"}), "migrate needs --workers or --to");
  EXPECT_EQ(error_of({"list", "--bogus", "1"}), "unknown option --bogus (see --help)");
  EXPECT_EQ(error_of({"list", "--timeout-ms", "0"}), "--timeout-ms: Value 0 not in range 1 to 3600000");
}

TEST(RegistryCtl, ShutdownAndMigrateBuildTheirBodies) {
  auto pool = parse({"shutdown", "266393094", "sampleSystem", "consumer"});
  EXPECT_EQ(pool.call->path, "/registry/system/shutdown");
  EXPECT_EQ(json::parse(pool.call->body), json({{"bootstrapperId", "266393094"},
                                                {"isolateSystemName", "sampleSystem"},
                                                {"isolateName", "consumer"}}));
  auto system = parse({"shutdown", "266393094", "sampleSystem"});
  EXPECT_FALSE(json::parse(system.call->body).contains("isolateName"));
  auto restart = parse({"restart", "266393094", "sampleSystem", "consumer"});
  EXPECT_EQ(restart.call->path, "/registry/system/restart");
  EXPECT_EQ(json::parse(restart.call->body), json({{"bootstrapperId", "266393094"},
                                                   {"isolateSystemName", "sampleSystem"},
                                                   {"isolateName", "consumer"}}));
  auto kill_one = parse({"kill", "1", "s", "c", "w-1"});
  EXPECT_EQ(kill_one.call->path, "/registry/system/kill");
  EXPECT_EQ(
      json::parse(kill_one.call->body),
      json({{"bootstrapperId", "1"}, {"isolateSystemName", "s"}, {"isolateName", "c"}, {"workerId", "w-1"}}));
  EXPECT_FALSE(json::parse(parse({"kill", "1", "s", "c"}).call->body).contains("workerId"));
  auto move = parse({"migrate", "1", "s", "c", "--to", "2"});
  EXPECT_EQ(json::parse(move.call->body), json({{"bootstrapperId", "1"},
                                                {"isolateSystemName", "s"},
                                                {"isolateName", "c"},
                                                {"toBootstrapperId", "2"}}));
  auto paths = parse({"migrate", "1", "s", "c", "--workers", "localhost,localhost"});
  EXPECT_EQ(json::parse(paths.call->body)["workersPaths"], json({"localhost", "localhost"}));
}

TEST(RegistryCtl, HelpIsGivenForTheToolAndForEachCommand) {
  EXPECT_NE(parse({"--help"}).help.find("exit status: 0 ok, 1 the registry answered an error"),
            std::string::npos);
  auto deploy = parse({"deploy", "--help"}).help;
  EXPECT_NE(deploy.find("--hot-deployment"), std::string::npos);
  EXPECT_NE(deploy.find("(default: roundRobin)"), std::string::npos);
}

TEST(RegistryCtl, AskSendsItsMessageToAPoolThroughTheMqsNotTheRegistry) {
  auto inv = parse({"ask", "hello/greeter", R"({"name": "Ada"})", "--mqs", "ws://127.0.0.1:42999/mqs"});
  ASSERT_TRUE(inv.ask) << inv.error;
  EXPECT_FALSE(inv.call);
  EXPECT_EQ(inv.ask->to, "hello/greeter");
  EXPECT_EQ(json::parse(inv.ask->body), json({{"name", "Ada"}}));
  EXPECT_EQ(inv.ask->mqs, "ws://127.0.0.1:42999/mqs");
  EXPECT_EQ(inv.ask->mode, "") << "the pool's, as the registry knows it";
  EXPECT_TRUE(inv.ask->check_registry);

  auto defaults = parse({"ask", "hello/greeter"});
  ASSERT_TRUE(defaults.ask) << defaults.error;
  EXPECT_EQ(defaults.ask->body, "{}");
  EXPECT_EQ(defaults.ask->mqs, "") << "the pool's, as the registry knows it";
  auto unchecked = parse({"ask", "--no-registry", "hello/greeter"});
  ASSERT_TRUE(unchecked.ask) << unchecked.error;
  EXPECT_FALSE(unchecked.ask->check_registry);
  EXPECT_EQ(unchecked.ask->mqs, "ws://127.0.0.1:42043/mqs");
  EXPECT_EQ(unchecked.ask->mode, "at-least-once");
  EXPECT_EQ(parse({"ask", "a/b", "--mode", "at-most-once"}).ask->mode, "at-most-once");
  EXPECT_EQ(json::parse(parse({"ask", "a/b", "-"}, "[1, 2]").ask->body), json({1, 2}));
}

TEST(RegistryCtl, AskRefusesABadAddressBodyModeOrUrlBeforeSendingAnything) {
  for (auto args : std::vector<std::vector<std::string>>{{"ask", "no-slash"},
                                                         {"ask", "a/b.c"},
                                                         {"ask", "a/b", "{not json"},
                                                         {"ask", "a/b", "--mode", "reply"},
                                                         {"ask", "a/b", "--mqs", "http://127.0.0.1:1/mqs"},
                                                         {"ask"}}) {
    auto inv = parse(args);
    EXPECT_FALSE(inv.ask) << args.size();
    EXPECT_FALSE(inv.error.empty()) << args.size();
  }
}

TEST(RegistryCtl, AskReportsAnMqsThatCannotBeReached) {
  ask_call call{"ws://127.0.0.1:1/mqs", "a/b", "{}", "at-least-once"};
  auto outcome = run_ask(call, std::chrono::seconds(10));
  EXPECT_EQ(outcome.status, 3);
  EXPECT_NE(outcome.text.find("cannot reach the MQS at ws://127.0.0.1:1/mqs"), std::string::npos)
      << outcome.text;
}

}  // namespace
}  // namespace dde::ctl
