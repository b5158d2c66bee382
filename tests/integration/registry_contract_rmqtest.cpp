// The registry's machine-readable contracts against real registries. GET /openapi.json is the
// checked-in registry/openapi.json; every documented operation answers each of its documented request
// examples with a status the document lists and a body its schema allows (a real cluster: RabbitMQ,
// dde-mqs, dde-registry with tokens and a cluster secret, two activators); every documented error is
// produced by some request (no or the wrong token, bad and oversized bodies, unknown ids, fake nodes
// that refuse, stay silent or disconnect, a standby of a registry pair); and every path the registry
// serves is documented, no other. A change to the code or to the document alone fails here.
#include <amqp.h>
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <map>
#include <set>

#include "amqp_session.hpp"
#include "cluster_fixture.hpp"
#include "dde/net/http_client.hpp"
#include "openapi_document.hpp"
#include "postgres_server.hpp"
#include "registry_fake_node.hpp"

namespace dde::test {
namespace {

using json = nlohmann::json;
using headers = std::map<std::string, std::string>;
using registry::test::fake_node;

const std::string admin_token = "contract-admin-token";
const std::string read_token = "contract-read-token";
const std::string cluster_secret = "contract-cluster-secret";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

const openapi_document& checked_in() {
  static const openapi_document d(read_json(DDE_SOURCE_DIR "/registry/openapi.json"),
                                  read_json(DDE_SOURCE_DIR "/registry/schemas/pool-spec.schema.json"));
  return d;
}

struct exchange {
  int status = 0;
  std::string content_type;
  headers head;  ///< lower-case names
  std::string body;
};

exchange call(const std::string& base, const std::string& method, const std::string& target,
              const std::string& body = {}, const headers& extra = {}) {
  auto r = net::http_fetch(method, base + target, body, extra, 30s);
  if (!r.answered()) throw std::runtime_error(method + " " + target + ": " + r.error);
  return {r.status, r.headers.count("content-type") ? r.headers["content-type"] : "", r.headers, r.body};
}

headers bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

/// A WebSocket handshake's headers, plus `extra`.
headers upgrade(headers extra = {}) {
  extra["Upgrade"] = "websocket";
  extra["Connection"] = "Upgrade";
  extra["Sec-WebSocket-Key"] = "dGhlIHNhbXBsZSBub25jZQ==";
  extra["Sec-WebSocket-Version"] = "13";
  return extra;
}

/// The values the document's examples use, and what stands for each of them in a test.
using substitutions = std::vector<std::pair<std::string, std::string>>;

json substitute(json value, const substitutions& subs) {
  if (value.is_string()) {
    for (auto& [from, to] : subs)
      if (value == from) return to;
    return value;
  }
  if (value.is_structured())
    for (auto& item : value) item = substitute(item, subs);
  return value;
}

std::string substitute_text(std::string text, const substitutions& subs) {
  for (auto& [from, to] : subs)
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  return text;
}

/// Checks answers against the document and remembers which statuses each operation produced.
class contract_log {
 public:
  explicit contract_log(const openapi_document& doc) : doc_(doc) {}

  void check(const openapi_operation& op, const exchange& answer, const std::string& what) {
    produced_[op.id].insert(answer.status);
    for (auto& e : doc_.answer_errors(op, answer.status, answer.content_type, answer.body))
      ADD_FAILURE() << what << ": " << e;
  }
  void expect(const openapi_operation& op, const exchange& answer, int status, const std::string& what) {
    EXPECT_EQ(answer.status, status) << what << ": " << answer.body.substr(0, 600);
    check(op, answer, what);
  }
  /// The documented statuses from `low` to `high` that no answer had, as "operationId status".
  std::set<std::string> unproduced(int low, int high) const {
    std::set<std::string> out;
    for (auto& op : doc_.operations())
      for (int status : doc_.statuses(op)) {
        auto it = produced_.find(op.id);
        if (status >= low && status <= high && (it == produced_.end() || !it->second.count(status)))
          out.insert(op.id + " " + std::to_string(status));
      }
    return out;
  }

 private:
  const openapi_document& doc_;
  std::map<std::string, std::set<int>> produced_;
};

/// The request body of `op`'s example `name`, with `subs` applied ("" without a body).
std::string example_body(const openapi_document& doc, const openapi_operation& op, const std::string& name,
                         const substitutions& subs) {
  for (auto& [n, body] : doc.request_examples(op))
    if (n == name) return substitute(body, subs).dump();
  if (!name.empty()) ADD_FAILURE() << op.id << " documents no example \"" << name << "\"";
  return {};
}

/// The first documented example of `op`'s body ("" without a body).
std::string first_example(const openapi_document& doc, const openapi_operation& op,
                          const substitutions& subs) {
  auto examples = doc.request_examples(op);
  return examples.empty() ? std::string() : substitute(examples.front().second, subs).dump();
}

/// A registry with tokens and a cluster secret, no broker: refusals that need no node.
registry_process guarded_registry(const std::filesystem::path& dir, std::vector<std::string> args = {}) {
  return start_registry(dir, 0,
                        {{"DDE_ADMIN_TOKEN", admin_token},
                         {"DDE_READ_TOKEN", read_token},
                         {"DDE_CLUSTER_SECRET", cluster_secret}},
                        {}, std::move(args));
}

/// The first operation documented on `path`.
const openapi_operation& on_path(const openapi_document& doc, const std::string& path) {
  for (auto& op : doc.operations())
    if (op.path == path) return op;
  throw std::out_of_range("nothing documented on " + path);
}

/// A fake node called `name` that answers like a real one.
fake_node::options fake(const std::string& name, std::uint16_t activator_port) {
  fake_node::options o;
  o.name = name;
  o.activator_port = activator_port;
  return o;
}

std::filesystem::path test_dir() {
  return fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
}

TEST(RegistryContract, TheRegistryServesTheCheckedInDocuments) {
  auto registry = start_registry(test_dir());
  for (auto [path, file] :
       {std::pair{"/openapi.json", "/registry/openapi.json"},
        std::pair{"/schemas/pool-spec.schema.json", "/registry/schemas/pool-spec.schema.json"}}) {
    auto served = call(registry.url(), "GET", path);
    EXPECT_EQ(served.status, 200) << path;
    EXPECT_EQ(served.content_type, "application/json") << path;
    EXPECT_EQ(json::parse(served.body), read_json(std::string(DDE_SOURCE_DIR) + file)) << path;
    EXPECT_EQ(call(registry.url(), "HEAD", path).status, 200) << path;
  }
  EXPECT_NO_THROW(checked_in().check_references());
}

TEST(RegistryContract, EveryPathTheRegistryServesIsDocumentedAndNoOther) {
  auto registry = start_registry(test_dir());
  const auto& doc = checked_in();
  std::set<std::string> documented;
  std::map<std::string, std::set<std::string>> methods;  // by documented path
  for (auto& op : doc.operations()) {
    documented.insert(op.method + " " + op.path);
    methods[op.path].insert(op.method);
  }

  // The registry's own list of what it serves (its answer to an unknown path) is the document's.
  auto unknown = call(registry.url(), "GET", "/no/such/path");
  ASSERT_EQ(unknown.status, 404);
  auto error = json::parse(unknown.body)["error"].get<std::string>();
  const std::string lead = "the registry serves ";
  ASSERT_NE(error.find(lead), std::string::npos) << error;
  std::set<std::string> served;
  std::string list = error.substr(error.find(lead) + lead.size()) + ", ";
  for (std::size_t start = 0, comma; (comma = list.find(", ", start)) != std::string::npos; start = comma + 2)
    served.insert(list.substr(start, comma - start));
  EXPECT_EQ(served, documented);

  // A method a path does not document is refused with the documented ones in Allow. The dead-letter
  // paths overlap ({id} and replay): a POST to an id is a 404 there, a GET of "replay" looks for a message.
  for (auto& [path, allowed] : methods) {
    const auto& op = on_path(doc, path);
    auto target = doc.example_target(op);
    target = target.substr(0, target.find('?'));
    std::string allow;
    for (auto& m : allowed) allow += (allow.empty() ? "" : ", ") + m;
    for (std::string method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
      if (allowed.count(method)) continue;
      SCOPED_TRACE(method + " " + target);
      auto r = call(registry.url(), method, target, method == "GET" ? "" : "{}");
      if (path.rfind("/registry/dlq/", 0) == 0) {
        EXPECT_TRUE(r.status == 404 || r.status == 405) << r.status << " " << r.body;
        continue;
      }
      EXPECT_EQ(r.status, 405) << r.body;
      EXPECT_EQ(r.head["allow"], allow);
    }
    // What the dashboard serves answers HEAD too.
    bool dashboards = path == "/" || path == "/metrics" || path == "/health" || path == "/registry/status" ||
                      path.find('.') != std::string::npos;
    if (dashboards) {
      EXPECT_EQ(call(registry.url(), "HEAD", target).status, 200) << "HEAD " << target;
    }
  }

  // Paths next to the documented ones are not served.
  for (auto path : {"/registry/",
                    "/registry/system",
                    "/registry/system/",
                    "/registry/systems/list",
                    "/registry/system/list/x",
                    "/registry/system/1/2",
                    "/registry/deploy/x",
                    "/registry/dlq",
                    "/registry/dlq/s",
                    "/registry/dlq/s/p/x/y",
                    "/registry/health/x",
                    "/registry/status/x",
                    "/registry/nodes",
                    "/registry/metrics",
                    "/openapi.yaml",
                    "/openapi",
                    "/schemas/",
                    "/schemas/pool-spec.json",
                    "/index.htm",
                    "/favicon.ico",
                    "/metrics/x",
                    "/health/x",
                    "/dashboard",
                    "/dashboard/live/x",
                    "/api",
                    "/v1/registry/system/list"}) {
    auto r = call(registry.url(), "GET", path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
  }
}

TEST(RegistryContract, EveryDocumentedErrorIsProducedWithTheDocumentedBody) {
  const auto dir = test_dir();
  const auto& doc = checked_in();
  contract_log log(doc);
  const substitutions none;

  // No or the wrong token, the read token on admin operations, bad and oversized bodies, unknown ids.
  {
    auto registry = guarded_registry(dir, {"--max-body", "65536"});
    const substitutions unknown_node = {{"266393094", "999999999"}, {"12133208", "999999998"}};
    for (auto& op : doc.operations()) {
      auto statuses = doc.statuses(op);
      const bool ws = op.spec.value("x-dde-websocket", false);
      auto target = doc.example_target(op);
      auto body = first_example(doc, op, none);
      auto ask = [&](const std::string& t, const std::string& b, const headers& h, int status,
                     const std::string& what) {
        log.expect(op, call(registry.url(), op.method, t, b, h), status, op.id + ": " + what);
      };
      if (statuses.count(401)) {
        if (op.path == "/registry") {
          ask(target, "", upgrade(), 401, "an upgrade without the cluster secret");
          ask(target, "", upgrade({{"X-DDE-Cluster-Secret", "wrong"}}), 401, "the wrong cluster secret");
        } else {
          ask(target, body, ws ? upgrade() : headers{}, 401, "no token");
          ask(target, body, bearer("wrong"), 401, "a wrong token");
        }
      }
      if (statuses.count(403)) ask(target, body, bearer(read_token), 403, "the read-only token");
      if (statuses.count(413))
        ask(target, std::string(70000, ' '), bearer(admin_token), 413, "a body too large");
      if (statuses.count(426)) ask(target, "", bearer(read_token), 426, "a plain GET");
      if (statuses.count(400) && op.spec.contains("requestBody"))
        ask(target, "{\"bootstrapperId\": ", bearer(admin_token), 400, "a body that is not JSON");
      if (statuses.count(400) && op.path.rfind("/registry/dlq/", 0) == 0 && op.method == "GET")
        ask(substitute_text(target, {{"sampleSystem", "sample%20System"}}), "", bearer(admin_token), 400,
            "a system name with a space");
      if (statuses.count(404)) {
        // An unknown node; for dead letters, a pool no node runs.
        ask(substitute_text(target, unknown_node), substitute_text(body, unknown_node), bearer(admin_token),
            404, "an unknown node");
      }
    }
  }

  // Nodes that refuse: their status comes back (409 here), and an apply says which step failed.
  {
    auto registry = start_registry(dir, 0, {}, {}, {"--heartbeat-ms", "0"});
    fake_node::options refusing = fake("refusing", 42050);
    refusing.fail_status = 409;
    fake_node refuser(registry.port, refusing);
    fake_node plain(registry.port, fake("plain", 42052));
    ASSERT_TRUE(refuser.wait_registered() && plain.wait_registered());
    // The plain node runs the pool, with an MQS that does not answer.
    auto closed = free_port();
    auto deploy = doc.request_examples(doc.operation("deploy")).front().second;
    deploy["bootstrapperId"] = plain.id();
    deploy["messageQueuingSystemServer"] = "ws://127.0.0.1:" + std::to_string(closed) + "/mqs";
    deploy["workersPaths"] = {"localhost"};
    ASSERT_EQ(call(registry.url(), "POST", "/registry/deploy", deploy.dump()).status, 200);
    const substitutions on_refuser = {{"266393094", refuser.id()}, {"12133208", refuser.id()}};
    const substitutions move_to_refuser = {{"266393094", plain.id()}, {"12133208", refuser.id()}};
    for (auto [id, example] : {std::pair{"deploy", "thesis"}, std::pair{"restart", "pool"},
                               std::pair{"kill", "worker"}, std::pair{"apply", "pools"}}) {
      const auto& op = doc.operation(id);
      log.expect(op, call(registry.url(), op.method, op.path, example_body(doc, op, example, on_refuser)),
                 409, std::string(id) + " on a node that refuses");
    }
    const auto& migrate = doc.operation("migrate");
    log.expect(migrate,
               call(registry.url(), "POST", migrate.path,
                    example_body(doc, migrate, "toBootstrapperId", move_to_refuser)),
               409, "a move to a node that refuses");
    for (auto& op : doc.operations())
      if (op.path.rfind("/registry/dlq/", 0) == 0)
        log.expect(op, call(registry.url(), op.method, doc.example_target(op), first_example(doc, op, none)),
                   502, op.id + ": an MQS that does not answer");
  }

  // Nodes that never answer (504 after --request-timeout-ms), and nodes that go away meanwhile (502).
  // Each with an example that reaches the node ("workersPaths": a move would stop at its unknown target).
  const std::vector<std::pair<std::string, std::string>> node_operations = {
      {"showNode", ""},    {"deploy", "thesis"}, {"shutdown", "pool"},        {"setRate", "limit"},
      {"restart", "pool"}, {"kill", "pool"},     {"migrate", "workersPaths"}, {"apply", "dryRun"}};
  {
    auto registry = start_registry(dir, 0, {}, {}, {"--heartbeat-ms", "0", "--request-timeout-ms", "1000"});
    fake_node::options quiet = fake("silent", 42054);
    quiet.answer = false;
    fake_node silent(registry.port, quiet);
    ASSERT_TRUE(silent.wait_registered());
    const substitutions on_silent = {{"266393094", silent.id()}};
    for (auto& [id, example] : node_operations) {
      const auto& op = doc.operation(id);
      log.expect(op,
                 call(registry.url(), op.method, substitute_text(doc.example_target(op), on_silent),
                      example_body(doc, op, example, on_silent)),
                 504, id + " to a node that does not answer");
    }
  }
  {
    auto registry = start_registry(dir, 0, {}, {}, {"--heartbeat-ms", "0"});
    for (auto& [id, example] : node_operations) {
      fake_node::options quiet = fake("leaving", 42056);
      quiet.answer = false;
      fake_node leaving(registry.port, quiet);
      ASSERT_TRUE(leaving.wait_registered());
      const substitutions on_leaving = {{"266393094", leaving.id()}};
      const auto& op = doc.operation(id);
      auto pending = std::async(std::launch::async, [&] {
        return call(registry.url(), op.method, substitute_text(doc.example_target(op), on_leaving),
                    example_body(doc, op, example, on_leaving));
      });
      ASSERT_TRUE(leaving.wait_requests(1)) << id;
      leaving.disconnect();
      log.expect(op, pending.get(), 502, id + " to a node that disconnects meanwhile");
    }
  }

  // A standby of a registry pair answers 503 naming the active one (and serves the dashboard's files
  // and its metrics).
  {
    postgres_server store("contract-store");
    store.start();
    const std::vector<std::string> pair = {"--state-url", store.url(),      "--standby-poll-ms",
                                           "100",         "--heartbeat-ms", "0"};
    auto active = start_registry(dir, 0, {}, {}, pair);
    auto standby = start_registry(dir, 0, {}, {}, pair);
    ASSERT_TRUE(wait_until([&] { return call(standby.url(), "GET", "/health").status == 503; }, 30s));
    for (auto& op : doc.operations()) {
      if (!doc.statuses(op).count(503)) continue;
      log.expect(op, call(standby.url(), op.method, doc.example_target(op), first_example(doc, op, none)),
                 503, op.id + " on a standby");
    }
    EXPECT_EQ(call(active.url(), "GET", "/health").status, 200);
  }

  EXPECT_EQ(log.unproduced(400, 599), std::set<std::string>{}) << "documented errors no request produced";
}

/// A real cluster with tokens and a cluster secret: RabbitMQ, dde-mqs, dde-registry, two activators.
class RegistryContractCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = test_dir();
    const std::map<std::string, std::string> secret = {{"DDE_CLUSTER_SECRET", cluster_secret}};
    mqs = start_mqs(shared_broker(), dir, 16, 0, secret);
    auto env = secret;
    env["DDE_ADMIN_TOKEN"] = admin_token;
    env["DDE_READ_TOKEN"] = read_token;
    registry = start_registry(dir, 0, env);
    a = start_activator(registry, dir, "contract-a", 0, {}, secret);
    b = start_activator(registry, dir, "contract-b", 0, {}, secret);
  }

  /// The pool `isolate` of `system` on node `id` as it describes it (null when it does not run there).
  json pool_on(const std::string& id, const std::string& system, const std::string& isolate) {
    for (auto& p : pools_of(registry, id, system))
      if (p.value("id", "") == system + "/" + isolate) return p;
    return nullptr;
  }
  /// Whether every worker of the pool is in `state`.
  bool workers_are(const std::string& id, const std::string& system, const std::string& state) {
    auto pool = pool_on(id, system, "consumer");
    if (pool.is_null() || !pool.contains("workers") || pool["workers"].empty()) return false;
    for (auto& w : pool["workers"])
      if (w.value("state", "") != state) return false;
    return true;
  }

  /// A dead letter with message id `id` in the pool's dead-letter queue, as the broker would leave one.
  void put_dead_letter(const std::string& queue, const std::string& id) {
    ASSERT_TRUE(wait_until([&] { return shared_broker().queue_depth(queue).has_value(); }, 60s)) << queue;
    detail::amqp_session s(shared_broker().host(), shared_broker().port(), "guest", "guest");
    amqp_basic_properties_t props{};
    props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    props.delivery_mode = 2;
    props.message_id = amqp_cstring_bytes(id.c_str());
    props.content_type = amqp_cstring_bytes("application/json");
    const std::string body = R"({"seq":42})";
    s.check_status(
        amqp_basic_publish(s.connection(), s.channel, amqp_empty_bytes, amqp_cstring_bytes(queue.c_str()), 0,
                           0, &props, amqp_cstring_bytes(body.c_str())),
        "publish a dead letter");
    auto depth = [&] { return shared_broker().queue_depth(queue).value_or(0); };
    ASSERT_TRUE(wait_until([&] { return depth() > 0; }, 30s)) << queue;
  }

  std::filesystem::path dir;
  mqs_process mqs;
  registry_process registry;
  activator_process a, b;
};

TEST_F(RegistryContractCluster, EveryDocumentedOperationAnswersItsExamplesAsDocumented) {
  // The document as this registry serves it.
  openapi_document doc(json::parse(call(registry.url(), "GET", "/openapi.json").body),
                       json::parse(call(registry.url(), "GET", "/schemas/pool-spec.schema.json").body));
  contract_log log(doc);
  const auto sys = unique_system("contract");
  const auto id_a = node_id(registry, "contract-a"), id_b = node_id(registry, "contract-b");
  ASSERT_FALSE(id_a.empty() || id_b.empty());
  substitutions subs = {{"266393094", id_a},
                        {"12133208", id_b},
                        {"ws://127.0.0.1:42043/mqs", mqs.url()},
                        {"ws://127.0.0.1:42044/activator", b.url()},
                        {"/usr/lib/dde/workers/libconsumer.so", worker_path("consumer").string()},
                        {"sampleSystem", sys}};
  std::set<std::string> visited;
  auto run = [&](const std::string& id, const std::string& example, int status,
                 const headers& head = bearer(admin_token)) {
    const auto& op = doc.operation(id);
    visited.insert(id);
    auto answer = call(registry.url(), op.method, substitute_text(doc.example_target(op), subs),
                       example_body(doc, op, example, subs), head);
    log.expect(op, answer, status, id + (example.empty() ? "" : " example " + example));
    return answer;
  };

  for (auto id : {"listNodes", "registryHealth", "health", "failoverStatus", "metrics", "openApi",
                  "poolSpecSchema", "dashboard", "dashboardIndex", "dashboardScript", "dashboardStyle"})
    run(id, "", 200, bearer(read_token));

  // The thesis's deploy: one local worker and one on the other node.
  run("deploy", "thesis", 200);
  ASSERT_TRUE(wait_until([&] { return workers_are(id_a, sys, "running"); }, long_wait))
      << pool_on(id_a, sys, "consumer").dump();
  auto shown = json::parse(run("showNode", "", 200, bearer(read_token)).body);
  auto pool = pool_on(id_a, sys, "consumer");
  ASSERT_FALSE(pool.is_null()) << shown.dump();
  run("clusterStatus", "", 200, bearer(read_token));
  run("setRate", "limit", 200);

  // New paths on the node: local workers only from here on.
  run("migrate", "workersPaths", 200);
  ASSERT_TRUE(wait_until([&] { return workers_are(id_a, sys, "running"); }, long_wait))
      << pool_on(id_a, sys, "consumer").dump();

  // KILL of a worker and of the pool, each undone by RESTART (thesis 3.4.2).
  auto worker = pool_on(id_a, sys, "consumer")["workers"][0]["id"].get<std::string>();
  subs.emplace_back("3f0c9a52-8d1e-4b7a-9c55-0e2f1a7b6d21", worker);
  run("kill", "worker", 200);
  run("restart", "pool", 200);
  ASSERT_TRUE(wait_until([&] { return workers_are(id_a, sys, "running"); }, long_wait))
      << pool_on(id_a, sys, "consumer").dump();
  run("kill", "pool", 200);
  ASSERT_TRUE(wait_until([&] { return workers_are(id_a, sys, "killed"); }, long_wait))
      << pool_on(id_a, sys, "consumer").dump();
  run("restart", "pool", 200);
  ASSERT_TRUE(wait_until([&] { return workers_are(id_a, sys, "running"); }, long_wait))
      << pool_on(id_a, sys, "consumer").dump();

  // To the other node and back.
  run("migrate", "toBootstrapperId", 200);
  auto back = call(registry.url(), "POST", "/registry/migrate",
                   json{{"bootstrapperId", id_b},
                        {"isolateSystemName", sys},
                        {"isolateName", "consumer"},
                        {"toBootstrapperId", id_a}}
                       .dump(),
                   bearer(admin_token));
  ASSERT_EQ(back.status, 200) << back.body;
  run("apply", "dryRun", 200);
  run("apply", "pools", 200);

  // Dead letters: one with the documented example's id, as the broker leaves them.
  const std::string dead_queue = "dde.dead." + sys + ".consumer";
  const std::string letter = "5c0e0b8e-5d0c-4a54-9b53-4c1f1f6a8b11";
  put_dead_letter(dead_queue, letter);
  auto listed = json::parse(run("listDeadLetters", "", 200, bearer(read_token)).body);
  EXPECT_EQ(listed["messages"][0]["id"], letter) << listed.dump();
  run("showDeadLetter", "", 200, bearer(read_token));
  run("purgeDeadLetters", "ids", 200);
  put_dead_letter(dead_queue, letter);
  run("replayDeadLetters", "ids", 200);
  run("replayDeadLetters", "all", 200);
  run("purgeDeadLetters", "all", 200);

  // The WebSocket endpoints take the handshake.
  run("nodeLink", "", 101, upgrade({{"X-DDE-Cluster-Secret", cluster_secret}}));
  run("dashboardLive", "", 101, upgrade(bearer(read_token)));

  // The thesis's two shutdowns. A second pool keeps the isolate system running after the first.
  auto second = json::parse(example_body(doc, doc.operation("deploy"), "thesis", subs));
  second["isolateName"] = "consumer2";
  second["workersPaths"] = {"localhost"};
  auto deployed = call(registry.url(), "POST", "/registry/deploy", second.dump(), bearer(admin_token));
  ASSERT_EQ(deployed.status, 200) << deployed.body;
  run("shutdown", "pool", 200);
  run("shutdown", "system", 200);

  for (auto& op : doc.operations()) EXPECT_TRUE(visited.count(op.id)) << op.id << " was not tried";
  EXPECT_EQ(log.unproduced(100, 299), std::set<std::string>{}) << "documented answers no request produced";
}

}  // namespace
}  // namespace dde::test
