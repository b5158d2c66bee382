// DDE as a cluster driven over REST (thesis 3.2.2, 3.2.4): real dde-registry, dde-activator,
// dde-isolate-system, dde-mqs processes and a real RabbitMQ node, all on loopback.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <numeric>

#include "cluster_fixture.hpp"

namespace dde::test {
namespace {

TEST_F(Cluster, DeploysTheThesisSampleBodiesAndReadsBackTheThesisShapes) {
  auto a = node("thesis-a");
  auto list = rest("GET", registry.url() + "/registry/system/list");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_TRUE(list.json.is_array());
  ASSERT_EQ(list.json.size(), 1u);
  EXPECT_TRUE(list.json[0]["bootstrapperId"].is_string());
  EXPECT_EQ(list.json[0]["ip"], "127.0.0.1");
  EXPECT_TRUE(list.json[0]["port"].is_string());  // the thesis writes the port as a string
  auto id = list.json[0]["bootstrapperId"].get<std::string>();

  // The thesis's deploy body, adapted to loopback and our .so (hotDeployment true as in the sample).
  auto sys = unique_system("sampleSystem");
  auto consumer = deploy_body(id, mqs.url(), sys, "consumer", "consumer", {{"stats_dir", dir}},
                              {"localhost", "localhost"}, "random");
  consumer["hotDeployment"] = true;
  auto deployed = deploy(consumer);
  ASSERT_EQ(deployed.status, 200) << deployed.body;

  auto pools = pools_of(registry, id, sys);
  ASSERT_EQ(pools.size(), 1u) << pools.dump();
  auto& p = pools[0];
  EXPECT_EQ(p["id"], sys + "/consumer");
  EXPECT_EQ(p["workerUri"], worker_path("consumer").string());
  EXPECT_EQ(p["workersCount"], 2);
  EXPECT_EQ(p["workersPaths"], nlohmann::json({"localhost", "localhost"}));
  EXPECT_EQ(p["routerType"], "random");
  EXPECT_EQ(p["hotDeployment"], true);

  auto producer =
      deploy_body(id, mqs.url(), sys, "producer", "producer", {{"to", sys + "/consumer"}, {"count", 2000}});
  ASSERT_EQ(deploy(producer).status, 200);
  ASSERT_TRUE(wait_until([&] { return sum_stats(dir, "consumer-").value("unique", 0) >= 2000; }, long_wait))
      << sum_stats(dir, "consumer-").dump();
  EXPECT_EQ(pools_of(registry, id, sys).size(), 2u);
}

TEST_F(Cluster, APoolWithALocalAndARemoteWorkerUsesBothAndSurvivesLosingTheRemoteNode) {
  auto a = node("local-a");
  auto b = node("remote-b");
  auto id = node_id(registry, "local-a");
  auto sys = unique_system("remote");
  auto consumer = deploy_body(id, mqs.url(), sys, "consumer", "consumer",
                              {{"stats_dir", dir}, {"log_dir", dir}}, {"localhost", b.url()});
  ASSERT_EQ(deploy(consumer).status, 200);
  // Both workers run: the remote one in node B's activator.
  ASSERT_TRUE(wait_until(
      [&] {
        auto pools = pools_of(registry, id, sys);
        if (pools.size() != 1) return false;
        for (auto& w : pools[0]["workers"])
          if (w["state"] != "running") return false;
        return true;
      },
      30s))
      << pools_of(registry, id, sys).dump();
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "producer", "producer",
                               {{"to", sys + "/consumer"}, {"count", 2000}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 2000; }, long_wait));
  // The sequence logs, not the stats files: a consumer writes its log line before the ack, while its
  // stats file is rewritten every 200 ms and may still read 0 right after the last message.
  auto per_process = read_seq_logs(dir).per_file;
  ASSERT_EQ(per_process.size(), 2u) << "one sequence log per process: the local host and node B";
  for (auto& [file, lines] : per_process) EXPECT_GT(lines, 0u) << file;

  // Node B goes away: the local worker keeps consuming, nothing is lost.
  b.proc->kill9();
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "producer2", "producer",
                               {{"to", sys + "/consumer"}, {"count", 1000}, {"start_seq", 2000}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 3000; }, long_wait))
      << "missing " << read_seq_logs(dir).missing(3000).size();
  EXPECT_TRUE(read_seq_logs(dir).missing(3000).empty());
}

TEST_F(Cluster, MigratesAConsumerPoolBetweenNodesUnderASteadyProducerWithoutLoss) {
  auto a = node("mig-a");
  auto b = node("mig-b");
  auto id_a = node_id(registry, "mig-a"), id_b = node_id(registry, "mig-b");
  auto sys = unique_system("mig");
  const int n = 8000;
  ASSERT_EQ(deploy(deploy_body(id_a, mqs.url(), sys, "consumer", "consumer",
                               {{"stats_dir", dir}, {"log_dir", dir}}, {"localhost", "localhost"}))
                .status,
            200);
  ASSERT_EQ(deploy(deploy_body(id_a, mqs.url(), sys, "producer", "producer",
                               {{"to", sys + "/consumer"}, {"count", n}, {"rate", 2000}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 1500; }, long_wait));
  auto moved = rest("POST", registry.url() + "/registry/migrate",
                    nlohmann::json{{"bootstrapperId", id_a},
                                   {"isolateSystemName", sys},
                                   {"isolateName", "consumer"},
                                   {"toBootstrapperId", id_b}}
                        .dump());
  ASSERT_EQ(moved.status, 200) << moved.body;
  // More messages once the pool runs on B: the stream goes on across the move by construction (the
  // first producer may have finished during a slow migration on a loaded machine).
  const int more = 2000;
  ASSERT_EQ(
      deploy(deploy_body(id_a, mqs.url(), sys, "producer2", "producer",
                         {{"to", sys + "/consumer"}, {"count", more}, {"start_seq", n}, {"rate", 2000}}))
          .status,
      200);
  ASSERT_TRUE(
      wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n + more); }, long_wait))
      << "missing " << read_seq_logs(dir).missing(n + more).size();
  auto report = read_seq_logs(dir);
  EXPECT_TRUE(report.missing(n + more).empty());
  // The consumers on A (before the move) and on B (after it) each handled messages: two processes.
  EXPECT_EQ(report.per_file.size(), 2u);
  auto on_b = pools_of(registry, id_b, sys);
  ASSERT_EQ(on_b.size(), 1u);
  EXPECT_EQ(on_b[0]["id"], sys + "/consumer");
  for (auto& p : pools_of(registry, id_a, sys)) EXPECT_NE(p["id"], sys + "/consumer");
}

TEST_F(Cluster, ShuttingDownOnePoolLeavesTheRestAndShuttingDownASystemEndsItsProcess) {
  auto a = node("shut-a");
  auto id = node_id(registry, "shut-a");
  auto s1 = unique_system("shutone"), s2 = unique_system("shuttwo");
  for (auto [sys, pool_name] : {std::pair{s1, "p1"}, std::pair{s1, "p2"}, std::pair{s2, "p3"}})
    ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, pool_name, "supplier", nlohmann::json::object())).status,
              200);
  auto shut =
      rest("POST", registry.url() + "/registry/system/shutdown",
           nlohmann::json{{"bootstrapperId", id}, {"isolateSystemName", s1}, {"isolateName", "p1"}}.dump());
  ASSERT_EQ(shut.status, 200) << shut.body;
  EXPECT_EQ(shut.json["stopped"]["pools"], nlohmann::json::array({"p1"}))
      << "it says what it stopped: " << shut.body;
  auto left = pools_of(registry, id, s1);
  ASSERT_EQ(left.size(), 1u) << left.dump();
  EXPECT_EQ(left[0]["id"], s1 + "/p2");
  EXPECT_EQ(pools_of(registry, id, s2).size(), 1u);

  int pid = left[0].value("pid", -1);
  ASSERT_TRUE(pid_running(pid));
  shut = rest("POST", registry.url() + "/registry/system/shutdown",
              nlohmann::json{{"bootstrapperId", id}, {"isolateSystemName", s1}}.dump());
  ASSERT_EQ(shut.status, 200) << shut.body;
  EXPECT_EQ(shut.json["stopped"]["isolateSystemName"], s1) << shut.body;
  EXPECT_EQ(shut.json["stopped"]["pools"], nlohmann::json::array({"p2"})) << shut.body;
  EXPECT_TRUE(wait_until([&] { return !pid_running(pid); }, 30s));
  EXPECT_TRUE(wait_until(
      [&] { return !rest("GET", registry.url() + "/registry/system/" + id).json.contains(s1); }, 10s));
  EXPECT_EQ(pools_of(registry, id, s2).size(), 1u);
}

TEST_F(Cluster, ApplyMakesTheClusterMatchAFileAndApplyingItTwiceChangesNothing) {
  // `ddectl apply -f` deploys what is missing, changes what differs (a rate at once, other
  // fields by redeploying), leaves what matches; the same file twice changes nothing.
  auto a = node("apply-a");
  auto id = node_id(registry, "apply-a");
  auto sys = unique_system("apply");
  auto file = dir / "pools.json";
  auto consumer = deploy_body("apply-a", mqs.url(), sys, "consumer", "supplier", nlohmann::json::object());
  auto other = deploy_body("apply-a", mqs.url(), sys, "other", "supplier", nlohmann::json::object());
  auto apply = [&](std::vector<std::string> extra = {}) {
    std::ofstream(file) << nlohmann::json::array({consumer, other}).dump(2);
    std::vector<std::string> args = {"apply", "-f", file.string(), "--registry", registry.url()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_tool("ddectl", args);
  };
  auto actions = [](const tool_result& r) {
    std::vector<std::string> out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_object())
      for (auto& line : j["pools"]) out.push_back(line.value("action", "") + ":" + line.value("result", ""));
    return out;
  };
  auto consumer_of = [&](const nlohmann::json& pools) {
    for (auto& p : pools)
      if (p["id"] == sys + "/consumer") return p;
    return nlohmann::json::object();
  };
  auto worker_ids = [&](const std::string& pool) {
    std::vector<std::string> out;
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/" + pool)
        for (auto& w : p["workers"]) out.push_back(w["id"].get<std::string>());
    return out;
  };

  auto created = apply({"-o", "json"});
  ASSERT_EQ(created.exit, 0) << created.err << created.out;
  EXPECT_EQ(actions(created), (std::vector<std::string>{"create:ok", "create:ok"})) << created.out;
  auto workers = worker_ids("consumer");
  ASSERT_EQ(workers.size(), 1u);

  auto again = apply();
  ASSERT_EQ(again.exit, 0) << again.err << again.out;
  EXPECT_NE(again.out.find("\n2 unchanged\n"), std::string::npos) << "a table for people:\n" << again.out;
  EXPECT_EQ(worker_ids("consumer"), workers) << "nothing was restarted";

  consumer["rate"] = {{"messages", 100}, {"perMs", 1000}};
  auto rated = apply({"-o", "json"});
  ASSERT_EQ(rated.exit, 0) << rated.err << rated.out;
  EXPECT_EQ(actions(rated), (std::vector<std::string>{"configure:ok", "unchanged:ok"})) << rated.out;
  auto pools = pools_of(registry, id, sys);
  EXPECT_EQ(consumer_of(pools)["rate"], (nlohmann::json{{"messages", 100}, {"perMs", 1000}})) << pools.dump();
  EXPECT_EQ(worker_ids("consumer"), workers) << "a new rate keeps the workers";

  consumer["routerType"] = "random";
  consumer["workersPaths"] = {"localhost", "localhost"};
  auto planned = apply({"--dry-run", "-o", "json"});
  ASSERT_EQ(planned.exit, 0) << planned.err << planned.out;
  EXPECT_EQ(actions(planned), (std::vector<std::string>{"redeploy:planned", "unchanged:planned"}))
      << planned.out;
  EXPECT_EQ(worker_ids("consumer"), workers) << "a dry run changes nothing";

  auto redeployed = apply({"-o", "json"});
  ASSERT_EQ(redeployed.exit, 0) << redeployed.err << redeployed.out;
  EXPECT_EQ(actions(redeployed), (std::vector<std::string>{"redeploy:ok", "unchanged:ok"})) << redeployed.out;
  pools = pools_of(registry, id, sys);
  ASSERT_EQ(pools.size(), 2u) << pools.dump();
  EXPECT_EQ(pools[0]["id"], sys + "/consumer") << "pools are listed by id, whichever was deployed last";
  EXPECT_EQ(consumer_of(pools)["routerType"], "random") << pools.dump();
  EXPECT_EQ(consumer_of(pools)["workersCount"], 2);
  EXPECT_EQ(consumer_of(pools)["rate"], (nlohmann::json{{"messages", 100}, {"perMs", 1000}}))
      << "kept through the redeploy";
  auto asked = run_tool("ddectl", {"ask", sys + "/consumer", R"({"n": 1})", "--registry", registry.url()});
  EXPECT_EQ(asked.exit, 0) << "the redeployed pool serves: " << asked.err;

  auto settled = apply({"-o", "json"});
  ASSERT_EQ(settled.exit, 0) << settled.err << settled.out;
  EXPECT_EQ(actions(settled), (std::vector<std::string>{"unchanged:ok", "unchanged:ok"})) << settled.out;

  consumer["uri"] = (dir / "libnothere.so").string();
  auto broken = apply({"-o", "json"});
  EXPECT_EQ(broken.exit, 1) << broken.out;
  EXPECT_EQ(actions(broken), (std::vector<std::string>{"redeploy:failed", "unchanged:ok"})) << broken.out;
  pools = pools_of(registry, id, sys);
  ASSERT_EQ(pools.size(), 2u) << "a redeploy that fails puts the old spec back: " << pools.dump();
  EXPECT_EQ(consumer_of(pools)["workerUri"], worker_path("supplier").string());
  EXPECT_EQ(run_tool("ddectl", {"ask", sys + "/consumer", "{}", "--registry", registry.url()}).exit, 0);
}

TEST_F(Cluster, DdectlAskFindsThePoolThroughTheRegistryAndAnUnknownPoolCreatesNothing) {
  // The registry says where the pool runs (its MQS, its delivery mode); a pool no node
  // runs is an error before any MQS is reached, so no queue appears on the broker.
  auto a = node("ask-a");
  auto id = node_id(registry, "ask-a");
  auto sys = unique_system("ctlask");
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "greeter", "supplier", nlohmann::json::object())).status,
            200);
  auto asked =
      run_tool("ddectl", {"ask", sys + "/greeter", R"({"name": "Ada"})", "--registry", registry.url()});
  ASSERT_EQ(asked.exit, 0) << asked.err;
  auto reply = nlohmann::json::parse(asked.out, nullptr, false);
  ASSERT_TRUE(reply.is_object()) << asked.out;
  EXPECT_EQ(reply["echo"], (nlohmann::json{{"name", "Ada"}})) << asked.out;

  auto unknown = run_tool("ddectl", {"ask", sys + "/nopool", "{}", "--registry", registry.url()});
  EXPECT_EQ(unknown.exit, 1) << unknown.err;
  EXPECT_NE(unknown.err.find("no pool " + sys + "/nopool is deployed"), std::string::npos) << unknown.err;
  EXPECT_FALSE(shared_broker().queue_depth(sys + ".nopool")) << "no queue declared for an unknown pool";
  EXPECT_FALSE(shared_broker().queue_depth("dde.dead." + sys + ".nopool"));
}

TEST_F(Cluster, ADeployToAnUnreachableMqsIsRefusedAndAPoolThatLosesItsMqsSaysItIsNotConnected) {
  // No "running" for a pool that cannot get a message.
  auto a = node("nolink-a");
  auto id = node_id(registry, "nolink-a");
  auto sys = unique_system("nolink");
  auto r = deploy(deploy_body(id, "ws://127.0.0.1:1/mqs", sys, "p", "supplier", nlohmann::json::object()));
  EXPECT_EQ(r.status, 504) << r.body;
  EXPECT_NE(r.body.find("cannot deploy " + sys +
                        "/p: no link to the MQS within 10000 ms (MQS ws://127.0.0.1:1/mqs "
                        "unreachable: "),
            std::string::npos)
      << r.body;
  EXPECT_TRUE(wait_until(
      [&] { return !rest("GET", registry.url() + "/registry/system/" + id).json.contains(sys); }, 30s))
      << "a refused deploy leaves no isolate system behind";

  auto own = start_mqs(shared_broker(), dir / "own-mqs");
  auto linked = unique_system("linked");
  ASSERT_EQ(deploy(deploy_body(id, own.url(), linked, "p", "supplier", nlohmann::json::object())).status,
            200);
  auto pool = [&] {
    auto pools = pools_of(registry, id, linked);
    return pools.empty() ? nlohmann::json() : pools[0];
  };
  EXPECT_EQ(pool()["poolState"], "running") << pool().dump();
  EXPECT_EQ(pool()["mqsLink"]["linked"], true) << pool().dump();
  own.proc->stop();
  ASSERT_TRUE(wait_until(
      [&] { return pool().value("poolState", std::string()).rfind("not connected: ", 0) == 0; }, 30s))
      << pool().dump();
  EXPECT_EQ(pool()["mqsLink"]["linked"], false);
  EXPECT_NE(pool()["mqsLink"]["error"].get<std::string>().find(own.url()), std::string::npos)
      << pool().dump();
}

TEST_F(Cluster, AKilledIsolateSystemIsRestartedWithItsPoolsAndLosesNothing) {
  auto a = node("crash-a");
  auto id = node_id(registry, "crash-a");
  auto consumers = unique_system("crashc"), producers = unique_system("crashp");
  const int n = 12000;
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), consumers, "consumer", "consumer",
                               {{"stats_dir", dir}, {"log_dir", dir}}))
                .status,
            200);
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), producers, "producer", "producer",
                               {{"to", consumers + "/consumer"}, {"count", n}, {"rate", 3000}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 2000; }, long_wait));
  int pid = pools_of(registry, id, consumers).at(0).value("pid", -1);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait))
      << "missing " << read_seq_logs(dir).missing(n).size() << "\n"
      << a.proc->log();
  EXPECT_TRUE(read_seq_logs(dir).missing(n).empty());
  auto pools = pools_of(registry, id, consumers);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_GE(pools[0].value("restarts", 0), 1);
  EXPECT_NE(pools[0].value("pid", -1), pid);
  EXPECT_EQ(pools[0]["state"], "running");
}

TEST_F(Cluster, BadRequestsGetPreciseErrorsAndDisturbNothing) {
  auto a = node("bad-a");
  auto id = node_id(registry, "bad-a");
  auto sys = unique_system("bad");
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "supplier", "supplier", nlohmann::json::object())).status,
            200);
  auto before = pools_of(registry, id, sys);

  auto missing_plugin = deploy_body(id, mqs.url(), sys, "ghost", "supplier", nlohmann::json::object());
  missing_plugin["uri"] = "/nonexistent/libghost.so";
  auto r = deploy(missing_plugin);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.json.value("error", std::string()).find("does not exist"), std::string::npos) << r.body;

  auto not_a_plugin = deploy_body(id, mqs.url(), sys, "notso", "supplier", nlohmann::json::object());
  not_a_plugin["uri"] = bin_path("dde-registry").string();  // an ELF executable, not a worker
  r = deploy(not_a_plugin);
  EXPECT_GE(r.status, 400);
  EXPECT_LT(r.status, 500);
  EXPECT_FALSE(r.json.value("error", std::string()).empty()) << r.body;

  auto unknown_node = deploy_body("999", mqs.url(), sys, "x", "supplier", nlohmann::json::object());
  EXPECT_EQ(deploy(unknown_node).status, 404);
  auto bad_name = deploy_body(id, mqs.url(), sys, "../x", "supplier", nlohmann::json::object());
  EXPECT_EQ(deploy(bad_name).status, 400);
  auto bad_router = deploy_body(id, mqs.url(), sys, "x", "supplier", nlohmann::json::object());
  bad_router["routerType"] = "fastest";
  EXPECT_EQ(deploy(bad_router).status, 400);
  EXPECT_EQ(rest("POST", registry.url() + "/registry/deploy", "{not json").status, 400);
  EXPECT_EQ(rest("POST", registry.url() + "/registry/deploy", std::string(2 * 1024 * 1024, ' ')).status, 413);
  EXPECT_EQ(rest("GET", registry.url() + "/registry/system/424242").status, 404);

  // A failed deploy into an isolate system of its own leaves no system behind, and the name is free.
  auto lone = unique_system("lone");
  auto lone_ghost = deploy_body(id, mqs.url(), lone, "ghost", "supplier", nlohmann::json::object());
  lone_ghost["uri"] = "/nonexistent/libghost.so";
  EXPECT_EQ(deploy(lone_ghost).status, 400);
  EXPECT_TRUE(wait_until(
      [&] {
        auto shown = rest("GET", registry.url() + "/registry/system/" + id, {}, registry.token);
        return shown.status == 200 && shown.json.is_object() && !shown.json.contains(lone);
      },
      long_wait))
      << "the empty isolate system " << lone << " still runs";
  r = deploy(deploy_body(id, mqs.url(), lone, "supplier", "supplier", nlohmann::json::object()));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(pools_of(registry, id, lone).size(), 1u);

  // Nothing already deployed was touched, and the registry still serves.
  auto after = pools_of(registry, id, sys);
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(after[0]["id"], before[0]["id"]);
  EXPECT_EQ(after[0]["pid"], before[0]["pid"]);
  EXPECT_EQ(rest("GET", registry.url() + "/registry/health").status, 200);
}

TEST_F(Cluster, PoolsKeepRunningWhileTheRegistryRestartsAndNodesComeBackWithTheirIds) {
  auto a = node("reg-a");
  auto id = node_id(registry, "reg-a");
  auto sys = unique_system("regrestart");
  const int n = 8000;
  ASSERT_EQ(
      deploy(deploy_body(id, mqs.url(), sys, "consumer", "consumer", {{"stats_dir", dir}, {"log_dir", dir}}))
          .status,
      200);
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "producer", "producer",
                               {{"to", sys + "/consumer"}, {"count", n}, {"rate", 2000}}))
                .status,
            200);
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= 1000; }, long_wait));
  auto port = registry.port;
  registry.proc->kill9();
  auto while_down = read_seq_logs(dir).unique.size();
  EXPECT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= while_down + 500; }, 30s))
      << "pools must keep processing without the registry";
  registry = start_registry(dir, port);
  ASSERT_TRUE(wait_until([&] { return node_id(registry, "reg-a") == id; }, 30s)) << a.proc->log();
  ASSERT_TRUE(wait_until([&] { return read_seq_logs(dir).unique.size() >= std::size_t(n); }, long_wait));
  EXPECT_TRUE(read_seq_logs(dir).missing(n).empty());
  EXPECT_EQ(pools_of(registry, id, sys).size(), 2u);  // a new registry asks the node what runs
}

TEST_F(Cluster, ARestartedActivatorAdoptsItsRunningIsolateSystems) {
  auto a = node("adopt-a");
  auto id = node_id(registry, "adopt-a");
  auto sys = unique_system("adopt");
  ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "supplier", "supplier", nlohmann::json::object(),
                               {"localhost", "localhost"}))
                .status,
            200);
  int pid = pools_of(registry, id, sys).at(0).value("pid", -1);
  ASSERT_TRUE(pid_running(pid));
  auto port = a.port;
  a.proc->kill9();
  // The isolate system outlives its activator...
  ASSERT_TRUE(wait_until([&] { return node_id(registry, "adopt-a").empty(); }, 30s));
  EXPECT_TRUE(pid_running(pid));
  // ...and a new activator on that port adopts it, pools and all.
  auto again = start_activator(registry, dir, "adopt-a", port);
  auto new_id = node_id(registry, "adopt-a");
  ASSERT_TRUE(wait_until([&] { return pools_of(registry, new_id, sys).size() == 1; }, 30s))
      << rest("GET", registry.url() + "/registry/system/" + new_id).body;
  EXPECT_EQ(pools_of(registry, new_id, sys).at(0).value("pid", -1), pid);
  // An adopted system that crashes is restarted like one the activator started itself.
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(wait_until(
      [&] {
        auto pools = pools_of(registry, new_id, sys);
        return pools.size() == 1 && pools[0].value("state", "") == "running" &&
               pools[0].value("pid", -1) != pid && pid_running(pools[0].value("pid", -1));
      },
      60s))
      << rest("GET", registry.url() + "/registry/system/" + new_id).body << again.proc->log();
}

TEST_F(Cluster, AnIsolateSystemThatNeverSaysHelloFailsItsDeployAfterTheNodesStartTimeout) {
  // --host-start-timeout-ms: the deploy's answer names the node's own limit, not the default 15 s.
  auto mute = dir / "mute-host.sh";
  std::ofstream(mute) << "#!/bin/sh\nexec sleep 600\n";
  std::filesystem::permissions(mute, std::filesystem::perms::owner_all);
  auto a = start_activator(registry, dir, "mute-a", 0,
                           {"--host-binary", mute.string(), "--host-start-timeout-ms", "700"});
  auto id = node_id(registry, "mute-a");
  auto sys = unique_system("mute");
  auto r = deploy(deploy_body(id, mqs.url(), sys, "p", "supplier", nlohmann::json::object()));
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_NE(r.body.find("did not start: no hello within 700 ms"), std::string::npos) << r.body;
}

TEST_F(Cluster, EachRouterTypeDistributesMessagesAsItSays) {
  auto a = node("routers-a");
  auto id = node_id(registry, "routers-a");
  auto sys = unique_system("routers");
  const int n = 300;
  auto custom = (worker_path("test_pick_last")).string();
  for (const std::string& router : std::vector<std::string>{"roundRobin", "random", "broadcast", custom}) {
    std::string pool_name = router == custom ? "custom" : router;
    auto body = deploy_body(id, mqs.url(), sys, pool_name, "consumer", nlohmann::json::object(),
                            {"localhost", "localhost", "localhost"}, router);
    ASSERT_EQ(deploy(body).status, 200) << router;
    ASSERT_EQ(deploy(deploy_body(id, mqs.url(), sys, "p" + pool_name, "producer",
                                 {{"to", sys + "/" + pool_name}, {"count", n}}))
                  .status,
              200);
  }
  auto done_of = [&](const std::string& pool_name) {
    std::vector<int> done;
    for (auto& p : pools_of(registry, id, sys))
      if (p["id"] == sys + "/" + pool_name)
        for (auto& w : p["workers"]) done.push_back(w.value("done", 0));
    return done;
  };
  auto total = [](const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); };
  ASSERT_TRUE(wait_until(
      [&] {
        return total(done_of("roundRobin")) == n && total(done_of("random")) == n &&
               total(done_of("broadcast")) == 3 * n && total(done_of("custom")) == n;
      },
      long_wait));
  for (int d : done_of("roundRobin")) EXPECT_GT(d, n / 6) << "round-robin spreads the load";
  for (int d : done_of("random")) EXPECT_GT(d, 0) << "random reaches every worker";
  EXPECT_EQ(done_of("broadcast"), (std::vector<int>{n, n, n}))
      << "broadcast gives every worker every message";
  EXPECT_EQ(done_of("custom"), (std::vector<int>{0, 0, n})) << "the custom router picks the last worker";
}

}  // namespace
}  // namespace dde::test
