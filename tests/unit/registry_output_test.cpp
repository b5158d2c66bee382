// What ddectl prints: tables and sentences by default, the registry's JSON with -o json; and the
// command lines of apply, status and -o.
#include <gtest/gtest.h>

#include <sstream>

#include "dde/registry/ctl_commands.hpp"
#include "dde/registry/ctl_output.hpp"

namespace dde::ctl {
namespace {

using json = nlohmann::ordered_json;

invocation parse(std::vector<std::string> args, const std::string& input = "") {
  std::istringstream in(input);
  return parse_invocation(args, in);
}

TEST(CtlOutput, ATableAlignsItsColumnsAndShowsEmptyCellsAsDashes) {
  EXPECT_EQ(table({"ID", "NAME"}, {{"266393094", "node-a"}, {"1", ""}}),
            "ID         NAME\n"
            "266393094  node-a\n"
            "1          -\n");
}

TEST(CtlOutput, ListIsATableOfNodesAndJsonOnlyWhenAsked) {
  json nodes = json::array({{{"bootstrapperId", "266393094"},
                             {"ip", "127.0.0.1"},
                             {"port", "5000"},
                             {"name", "node-a"},
                             {"activator", "ws://127.0.0.1:42042/activator"},
                             {"connectedAt", "2026-11-26T01:00:00Z"}}});
  EXPECT_EQ(render("list", {}, nodes, output_format::table),
            "ID         NAME    ACTIVATOR                       CONNECTED\n"
            "266393094  node-a  ws://127.0.0.1:42042/activator  2026-11-26T01:00:00Z\n");
  EXPECT_EQ(render("list", {}, nodes, output_format::json), nodes.dump(2) + "\n");
  EXPECT_EQ(render("list", {}, json::array(), output_format::table), "no node is connected\n");
}

TEST(CtlOutput, ShowListsSystemsPoolsWithStateRatesAndWorkersAndWhyAPoolIsNotRunning) {
  json pool = {
      {"id", "shop/orders"},
      {"routerType", "roundRobin"},
      {"deliveryMode", "at-least-once"},
      {"rate", {{"messages", 10}, {"perMs", 60000}}},
      {"poolState", "stopped: 10 restarts within 60000 ms"},
      {"state", "running"},
      {"pid", 4242},
      {"restarts", 0},
      {"stats", {{"delivered", 7}, {"done", 5}, {"failed", 2}}},
      {"governance", {{"deadLettered", 1}}},
      {"workers",
       json::array(
           {{{"id", "w1"}, {"path", "localhost"}, {"state", "running"}, {"inFlight", 0}, {"done", 5}},
            {{"id", "w2"}, {"path", "localhost"}, {"state", "down"}, {"inFlight", 0}, {"done", 0}}})}};
  auto out = render("show", {"266393094"}, json{{"shop", json::array({pool})}}, output_format::table);
  EXPECT_EQ(out,
            "SYSTEM  PROCESS  PID   RESTARTS  POOLS\n"
            "shop    running  4242  0         1\n"
            "\n"
            "POOL         STATE    WORKERS  ROUTER      MODE           RATE    IN  DONE  FAILED  DEAD\n"
            "shop/orders  stopped  1/2      roundRobin  at-least-once  10/60s  7   5     2       1\n"
            "shop/orders: stopped: 10 restarts within 60000 ms\n"
            "\n"
            "WORKER  POOL         PATH       STATE    IN-FLIGHT  DONE\n"
            "w1      shop/orders  localhost  running  0          5\n"
            "w2      shop/orders  localhost  down     0          0\n");
  EXPECT_EQ(render("show", {"1"}, json::object(), output_format::table), "the node runs no isolate system\n");
}

TEST(CtlOutput, StatusIsOneRowPerPoolWithItsRatesAndDepths) {
  json snapshot = {
      {"uptimeSeconds", 3},
      {"nodes",
       json::array({{{"bootstrapperId", "1"},
                     {"name", "node-a"},
                     {"health", "ok"},
                     {"systems", json::array({{{"name", "shop"},
                                               {"pools", json::array({{{"id", "shop/orders"},
                                                                       {"poolState", "running"},
                                                                       {"workersCount", 2},
                                                                       {"live",
                                                                        {{"in", 120.5},
                                                                         {"out", 118.0},
                                                                         {"inFlight", 3},
                                                                         {"queueDepth", 40},
                                                                         {"deadLetterDepth", 0}}}}})}}})}},
                    {{"bootstrapperId", "2"},
                     {"name", "node-b"},
                     {"health", "unreachable"},
                     {"error", "timed out"}}})}};
  EXPECT_EQ(render("status", {}, snapshot, output_format::table),
            "NODE    SYSTEM  POOL    STATE        WORKERS  IN/S   OUT/S  IN-FLIGHT  QUEUE  DLQ\n"
            "node-a  shop    orders  running      2        120.5  118    3          40     0\n"
            "node-b  -       -       unreachable  -        -      -      -          -      -\n"
            "node node-b: timed out\n");
}

TEST(CtlOutput, ApplySaysWhatItDidWithEachPoolAndCountsThem) {
  json answer = {{"dryRun", true},
                 {"pools", json::array({{{"pool", "shop/a"},
                                         {"node", "1"},
                                         {"action", "create"},
                                         {"changed", json::array()},
                                         {"result", "planned"}},
                                        {{"pool", "shop/b"},
                                         {"node", "2"},
                                         {"from", "1"},
                                         {"action", "move"},
                                         {"changed", json::array({"credits"})},
                                         {"result", "planned"}}})},
                 {"summary", {{"create", 1}, {"move", 1}}}};
  EXPECT_EQ(render("apply", {}, answer, output_format::table),
            "POOL    NODE    ACTION  CHANGED  RESULT\n"
            "shop/a  1       create  -        planned\n"
            "shop/b  1 -> 2  move    credits  planned\n"
            "1 create, 1 move (dry run: nothing was changed)\n");
}

TEST(CtlOutput, OtherCommandsAnswerInASentence) {
  EXPECT_EQ(render("shutdown", {"1", "shop"},
                   json{{"stopped", {{"isolateSystemName", "shop"}, {"pools", {"a", "b"}}, {"pid", 77}}}},
                   output_format::table),
            "stopped isolate system shop (pid 77) and its pools a, b\n");
  EXPECT_EQ(
      render("shutdown", {"1", "shop", "a"},
             json{{"stopped", {{"isolateSystemName", "shop"}, {"pools", {"a"}}}}}, output_format::table),
      "stopped pool shop/a\n");
  EXPECT_EQ(
      render("deploy", {}, json{{"isolateSystemName", "shop"}, {"isolateName", "a"}}, output_format::table),
      "deployed pool shop/a\n");
  EXPECT_EQ(
      render("health", {}, json{{"status", "ok"}, {"nodes", 2}, {"uptimeSeconds", 9}}, output_format::table),
      "ok: 2 node(s) connected, up 9 s\n");
  EXPECT_EQ(render("migrate", {"1", "shop", "a"}, json{{"from", "1"}, {"to", "2"}}, output_format::table),
            "moved pool shop/a from node 1 to node 2\n");
}

TEST(CtlCommands, OutputIsATableUnlessOIsJson) {
  EXPECT_EQ(parse({"list"}).output, output_format::table);
  EXPECT_EQ(parse({"-o", "json", "list"}).output, output_format::json);
  EXPECT_EQ(parse({"list", "--output=json"}).output, output_format::json);
  auto bad = parse({"list", "-o", "yaml"});
  EXPECT_FALSE(bad.call);
  EXPECT_EQ(bad.error, "--output: must be table or json, got \"yaml\"");
  EXPECT_EQ(parse({"status"}).call->path, "/registry/status");
}

TEST(CtlCommands, ApplySendsTheFileAndMarksADryRun) {
  auto from_stdin = parse({"apply", "-f", "-"}, R"([{"isolateName": "a"}])");
  ASSERT_TRUE(from_stdin.call) << from_stdin.error;
  EXPECT_EQ(from_stdin.call->method, "POST");
  EXPECT_EQ(from_stdin.call->path, "/registry/apply");
  EXPECT_EQ(json::parse(from_stdin.call->body), json::parse(R"([{"isolateName": "a"}])"));
  EXPECT_EQ(from_stdin.timeout, std::chrono::milliseconds(300000)) << "deploys one after another take time";
  auto dry = parse({"apply", "-", "--dry-run", "--timeout-ms", "5000"}, R"([{"isolateName": "a"}])");
  ASSERT_TRUE(dry.call) << dry.error;
  EXPECT_EQ(nlohmann::json::parse(dry.call->body),
            nlohmann::json::parse(R"({"pools": [{"isolateName": "a"}], "dryRun": true})"));
  EXPECT_EQ(dry.timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(parse({"apply"}).error,
            "apply needs -f FILE (a JSON array of deploy bodies, '-' = standard input)");
  EXPECT_EQ(parse({"apply", "-f", "-"}, "[").error, "standard input is not valid JSON");
  EXPECT_EQ(parse({"apply", "-f", "-"}, "3").error,
            "the file must hold a JSON array of deploy bodies or {\"pools\": [...]}");
}

}  // namespace
}  // namespace dde::ctl
