// The registry's machine-readable contracts without a process: the OpenAPI document and the pool spec's
// JSON Schema it serves (compiled in) held against its route table, its access guard, the REST
// validation and parse_pool_spec, so that neither can change without the other.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <set>

#include "access_control.hpp"
#include "apply_plan.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "openapi_document.hpp"
#include "rest_api.hpp"
#include "rest_validation.hpp"
#include "web_assets.hpp"

namespace dde::registry::test {
namespace {

using json = nlohmann::json;
using dde::test::openapi_document;

json compiled_in(const std::string& path) {
  const auto* asset = find_web_asset(path);
  if (!asset) throw std::runtime_error(path + " is not compiled in");
  return json::parse(asset->body);
}

const openapi_document& document() {
  static const openapi_document d(compiled_in("/openapi.json"),
                                  compiled_in("/schemas/pool-spec.schema.json"));
  return d;
}

const json& pool_schema() { return document().schemas().document("schemas/pool-spec.schema.json"); }

/// Why `body` is not a deploy body by the document (DeployRequest: the pool spec with action).
std::vector<std::string> schema_errors(const json& body) {
  return document().schemas().errors_against(body, "#/components/schemas/DeployRequest", "openapi.json");
}

/// What the registry says of `body` as a deploy: "" when it takes it.
std::string registry_error(const json& body) {
  auto parsed = parse_deploy(ordered_json::parse(body.dump()));
  return parsed ? "" : parsed.error();
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines) out += l + "\n";
  return out;
}

/// The schema's first example (the thesis's body) with local workers only, and a hashKey so that every
/// router takes it.
json base_body() {
  auto body = pool_schema()["examples"][0];
  body["workersPaths"] = {"localhost"};
  body["hashKey"] = "customer";
  return body;
}

TEST(RegistryOpenApi, TheDocumentsAreCompiledInAndEveryReferenceResolves) {
  for (auto path : {"/openapi.json", "/schemas/pool-spec.schema.json"}) {
    const auto* asset = find_web_asset(path);
    ASSERT_NE(asset, nullptr) << path;
    EXPECT_EQ(asset->content_type, "application/json");
  }
  EXPECT_EQ(document().openapi()["openapi"], "3.1.0");
  EXPECT_EQ(pool_schema()["$schema"], "https://json-schema.org/draft/2020-12/schema");
  EXPECT_NO_THROW(document().check_references());
  std::set<std::string> ids;
  for (auto& op : document().operations()) {
    EXPECT_FALSE(op.id.empty()) << op.method << " " << op.path;
    EXPECT_TRUE(ids.insert(op.id).second) << "operationId " << op.id << " twice";
  }
}

TEST(RegistryOpenApi, TheDocumentedEndpointsAreExactlyTheRoutesTheRegistryServes) {
  std::set<std::string> documented, served;
  for (auto& op : document().operations()) documented.insert(op.method + " " + op.path);
  for (auto& route : rest_routes()) served.insert(route.method + " " + route.path);
  EXPECT_EQ(documented, served);
  // The thesis's four keep their paths (thesis 3.2.2).
  for (auto thesis : {"GET /registry/system/list", "GET /registry/system/{bootstrapperId}",
                      "POST /registry/deploy", "POST /registry/system/shutdown"})
    EXPECT_TRUE(documented.count(thesis)) << thesis;
}

TEST(RegistryOpenApi, EachOperationsRoleAndSecurityAreWhatTheAccessGuardEnforces) {
  for (auto& op : document().operations()) {
    SCOPED_TRACE(op.method + " " + op.path);
    auto documented = op.spec.value("x-dde-role", "");
    bool websocket = op.spec.value("x-dde-websocket", false);
    auto target = document().example_target(op);
    auto path = target.substr(0, target.find('?'));
    auto needed = required_role(op.method, path, websocket);
    auto statuses = document().statuses(op);
    if (documented == "cluster-secret") {
      // Tokens do not guard the nodes' link: the cluster secret does (401 without it).
      EXPECT_TRUE(websocket);
      EXPECT_EQ(needed, role::open);
      EXPECT_EQ(op.spec["security"], json::parse(R"([{"clusterSecret": []}])"));
      EXPECT_TRUE(statuses.count(401));
      continue;
    }
    ASSERT_TRUE(documented == "open" || documented == "read" || documented == "admin") << documented;
    EXPECT_EQ(needed, documented == "open" ? role::open : documented == "read" ? role::read : role::admin);
    EXPECT_EQ(op.spec["security"],
              documented == "open" ? json::array() : json::parse(R"([{"bearerToken": []}])"));
    EXPECT_EQ(statuses.count(401), documented == "open" ? 0u : 1u);
    EXPECT_EQ(statuses.count(403), documented == "admin" ? 1u : 0u);
  }
}

TEST(RegistryOpenApi, EveryExampleMatchesItsSchema) {
  for (auto& op : document().operations()) {
    SCOPED_TRACE(op.method + " " + op.path);
    EXPECT_EQ(document().example_target(op).find('{'), std::string::npos)
        << "a path parameter without an example";
    auto examples = document().request_examples(op);
    EXPECT_EQ(examples.empty(), !op.spec.contains("requestBody")) << "a request body without an example";
    for (auto& [name, body] : examples) {
      SCOPED_TRACE("request example " + name);
      EXPECT_EQ(joined(document().schemas().errors(body, document().request_schema(op), "openapi.json")), "");
    }
    for (int status : document().statuses(op)) {
      const auto* r = document().response(op, status);
      ASSERT_NE(r, nullptr);
      EXPECT_TRUE(r->contains("description"));
      const auto content = r->value("content", json::object());
      for (auto& [type, media] : content.items()) {
        if (!media.contains("example")) continue;
        SCOPED_TRACE(std::to_string(status) + " " + type + " example");
        EXPECT_EQ(joined(document().schemas().errors(media["example"], media["schema"], "openapi.json")), "");
      }
    }
  }
}

TEST(RegistryOpenApi, EveryOperationTakingABodyDocumentsMalformedAndOversizedBodies) {
  for (auto& op : document().operations()) {
    if (!op.spec.contains("requestBody")) continue;
    auto statuses = document().statuses(op);
    EXPECT_TRUE(statuses.count(400)) << op.id;
    EXPECT_TRUE(statuses.count(413)) << op.id;
  }
}

TEST(RegistryOpenApi, TheDocumentedRequestExamplesAreTakenByTheRegistrysValidation) {
  for (auto& [name, body] : document().request_examples(document().operation("deploy")))
    EXPECT_EQ(registry_error(body), "") << name;
  for (auto& [name, body] : document().request_examples(document().operation("apply"))) {
    auto parsed = parse_apply(ordered_json::parse(body.dump()));
    EXPECT_TRUE(parsed) << name << ": " << parsed.error();
  }
  for (auto& [name, body] : document().request_examples(document().operation("shutdown")))
    EXPECT_TRUE(parse_shutdown(ordered_json::parse(body.dump()))) << name;
  for (auto& [name, body] : document().request_examples(document().operation("kill")))
    EXPECT_TRUE(parse_kill(ordered_json::parse(body.dump()))) << name;
  for (auto& [name, body] : document().request_examples(document().operation("migrate"))) {
    auto parsed = parse_migrate(ordered_json::parse(body.dump()));
    EXPECT_TRUE(parsed) << name << ": " << (parsed ? "" : parsed.error());
  }
}

TEST(PoolSpecSchema, ItsPropertiesAreTheFieldsADeployReads) {
  std::set<std::string> properties, fields(pool_spec_fields().begin(), pool_spec_fields().end());
  for (auto& [key, unused] : pool_schema()["properties"].items()) properties.insert(key);
  fields.insert({"action", "bootstrapperId", "messageQueuingSystemServer"});
  EXPECT_EQ(properties, fields);
  EXPECT_EQ(pool_schema()["additionalProperties"], false);
}

TEST(PoolSpecSchema, EveryExampleMatchesTheSchemaAndTheRegistryTakesIt) {
  ASSERT_GE(pool_schema()["examples"].size(), 3u);
  for (auto& example : pool_schema()["examples"]) {
    SCOPED_TRACE(example.dump());
    EXPECT_EQ(joined(schema_errors(example)), "");
    EXPECT_EQ(registry_error(example), "");
  }
}

TEST(PoolSpecSchema, WithoutARequiredFieldABodyIsRefusedByBoth) {
  auto required = pool_schema()["required"];
  required.push_back("action");
  for (auto& key : required) {
    auto body = base_body();
    body.erase(key.get<std::string>());
    EXPECT_NE(joined(schema_errors(body)), "") << key;
    EXPECT_EQ(registry_error(body).rfind("missing field \"" + key.get<std::string>() + "\"", 0), 0u)
        << key << ": " << registry_error(body);
    body[key.get<std::string>()] = nullptr;  // null counts as absent
    EXPECT_NE(joined(schema_errors(body)), "") << key;
    EXPECT_NE(registry_error(body), "") << key;
  }
}

TEST(PoolSpecSchema, ValuesOfAnotherTypeAreRefusedByBothAndNullIsAbsent) {
  for (auto& [key, property] : pool_schema()["properties"].items()) {
    if (key == "args") continue;  // anything
    SCOPED_TRACE(key);
    auto body = base_body();
    bool takes_strings = property.dump().find("\"string\"") != std::string::npos ||
                         property.contains("anyOf") || property.contains("$ref");
    body[key] = takes_strings ? json(12) : json("twelve");
    EXPECT_NE(joined(schema_errors(body)), "");
    EXPECT_NE(registry_error(body), "");
    bool required = false;
    for (auto& r : pool_schema()["required"]) required = required || r == key;
    if (required || key == "action") continue;
    body[key] = nullptr;
    EXPECT_EQ(joined(schema_errors(body)), "");
    EXPECT_EQ(registry_error(body), "");
  }
}

/// One past `bound` (+1 or -1), an integer when the bound is one.
json past(const json& bound, int step) {
  if (bound.is_number_integer()) return bound.get<std::int64_t>() + step;
  return bound.get<double>() + step;
}

/// Calls `probe(path, value, valid)` for the bounds of every number the schema bounds: its minimum and
/// maximum (valid), and one past each (not). `path` is a JSON pointer into a deploy body.
void for_each_bound(const std::function<void(const std::string&, const json&, bool)>& probe) {
  auto bounds = [&](const std::string& path, const json& schema) {
    if (schema.contains("minimum")) {
      probe(path, schema["minimum"], true);
      probe(path, past(schema["minimum"], -1), false);
    }
    if (schema.contains("maximum")) {
      probe(path, schema["maximum"], true);
      probe(path, past(schema["maximum"], +1), false);
    }
  };
  for (auto& [key, property] : pool_schema()["properties"].items()) {
    bounds("/" + key, property);
    const auto properties = property.value("properties", json::object());
    for (auto& [sub, schema] : properties.items()) {
      bounds("/" + key + "/" + sub, schema);
      if (schema.contains("items")) bounds("/" + key + "/" + sub + "/0", schema["items"]);
      if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
        bounds("/" + key + "/" + sub + "/k", schema["additionalProperties"]);
    }
  }
}

TEST(PoolSpecSchema, EveryBoundOfItsNumbersIsTheParsers) {
  // The objects the bounds are tried in: the fields they need, nothing that could refuse a bound.
  const json base_objects = {{"rate", {{"messages", 10}, {"perMs", 1000}}},
                             {"supervision", json::object()},
                             {"backoff", json::object()},
                             {"retry", {{"delays", {1000}}}},
                             {"subPools", {{"key", "tenant"}, {"capacity", json::object()}}},
                             {"scale", {{"max", 1024}}},
                             {"partitions", {{"count", 4}, {"key", "customer"}}},
                             {"canary", json::object()}};
  std::size_t probes = 0;
  for_each_bound([&](const std::string& path, const json& value, bool valid) {
    auto body = base_body();
    auto top = path.substr(1, path.find('/', 1) - 1);
    if (base_objects.contains(top)) body[top] = base_objects[top];
    if (top == "partitions") body.erase("routerType");  // the sample's random cannot keep a key's order
    body[json::json_pointer(path)] = value;
    SCOPED_TRACE(path + " = " + value.dump());
    EXPECT_EQ(joined(schema_errors(body)).empty(), valid) << joined(schema_errors(body));
    EXPECT_EQ(registry_error(body).empty(), valid) << registry_error(body);
    ++probes;
  });
  EXPECT_GT(probes, 100u);
}

TEST(PoolSpecSchema, EveryValueOfItsEnumsIsTheParsersAndOthersAreRefusedByBoth) {
  std::vector<std::pair<std::string, json>> values;
  for (auto& router : pool_schema()["properties"]["routerType"]["anyOf"][0]["enum"])
    if (!router.is_null()) values.emplace_back("/routerType", router);
  for (auto& mode : pool_schema()["properties"]["deliveryMode"]["enum"])
    if (!mode.is_null()) values.emplace_back("/deliveryMode", mode);
  for (auto& s : pool_schema()["properties"]["supervision"]["properties"]["strategy"]["enum"])
    values.emplace_back("/supervision/strategy", s);
  for (auto& f : pool_schema()["properties"]["supervision"]["properties"]["failedMessage"]["enum"])
    values.emplace_back("/supervision/failedMessage", f);
  values.emplace_back("/routerType", "/usr/lib/dde/routers/libpick_last.so");
  values.emplace_back("/routerType", "libmine.so");
  EXPECT_GT(values.size(), 20u);
  for (auto& [path, value] : values) {
    auto body = base_body();
    body[json::json_pointer(path)] = value;
    EXPECT_EQ(joined(schema_errors(body)), "") << path << " = " << value;
    EXPECT_EQ(registry_error(body), "") << path << " = " << value;
  }
}

TEST(PoolSpecSchema, BodiesTheSchemaRefusesTheRegistryRefusesWithTheReason) {
  struct bad {
    std::string what;
    std::function<void(json&)> change;
    std::string error;  ///< what the registry's error starts with
  };
  const std::vector<bad> cases = {
      {"an unknown routerType", [](json& b) { b["routerType"] = "fastest"; },
       "unknown routerType \"fastest\""},
      {"a field no deploy reads", [](json& b) { b["routertype"] = "random"; },
       "unknown field \"routertype\" (did you mean \"routerType\"?)"},
      {"credits as a string", [](json& b) { b["credits"] = "8"; }, "field \"credits\" must be an integer"},
      {"a name with a space", [](json& b) { b["isolateName"] = "con sumer"; },
       "field \"isolateName\" is \"con sumer\""},
      {"another action", [](json& b) { b["action"] = "action.removeIsolate"; }, "field \"action\" is"},
      {"an MQS that is not a WebSocket URL",
       [](json& b) { b["messageQueuingSystemServer"] = "http://h:1/mqs"; },
       "field \"messageQueuingSystemServer\" is"},
      {"no workers", [](json& b) { b["workersPaths"] = json::array(); }, "field \"workersPaths\" must be"},
      {"a worker path that is no URL", [](json& b) { b["workersPaths"] = {"node-b"}; },
       "workersPaths entry \"node-b\""},
      {"exactly-once", [](json& b) { b["deliveryMode"] = "exactly-once"; }, "field \"deliveryMode\" must be"},
      {"a rate without its window",
       [](json& b) {
         b["rate"] = {{"messages", 10}};
       },
       "field \"rate\" must be"},
      {"a sha256 too short", [](json& b) { b["sha256"] = "abc"; }, "field \"sha256\" must be"},
      {"consistentHash without hashKey",
       [](json& b) {
         b["routerType"] = "consistentHash";
         b.erase("hashKey");
       },
       "routerType consistentHash needs \"hashKey\""},
      {"a downloaded plugin on a remote worker",
       [](json& b) {
         b["uri"] = "https://plugins.example.org/libconsumer.so";
         b["workersPaths"] = {"localhost", "ws://127.0.0.1:42044/activator"};
       },
       "workersPaths entry \"ws://127.0.0.1:42044/activator\""},
      {"scatterGather on a remote worker",
       [](json& b) {
         b["routerType"] = "scatterGather";
         b["workersPaths"] = {"ws://127.0.0.1:42044/activator"};
       },
       "workersPaths entry"},
      {"a canary without hot deployment",
       [](json& b) {
         b["hotDeployment"] = false;
         b["canary"] = {{"workers", 1}};
       },
       "field \"canary\" needs \"hotDeployment\": true"},
      {"a canary of workers and percent",
       [](json& b) {
         b["canary"] = {{"workers", 1}, {"percent", 10}};
       },
       "canary.workers and canary.percent exclude each other"},
      {"an unknown canary field",
       [](json& b) {
         b["canary"] = {{"window", 1000}};
       },
       "unknown field canary.window"},
      {"a retry at most once",
       [](json& b) {
         b["deliveryMode"] = "at-most-once";
         b["retry"] = {{"delays", {1000}}};
       },
       "field \"retry\" needs deliveryMode at-least-once"},
      {"a retry that dead-letters at once",
       [](json& b) {
         b["retry"] = {{"delays", {1000}}};
         b["supervision"] = {{"failedMessage", "dead-letter"}};
       },
       "field \"retry\" and supervision.failedMessage \"dead-letter\" contradict each other"},
      {"a sub-pool without its key",
       [](json& b) {
         b["subPools"] = {{"defaultCapacity", 1}};
       },
       "field \"subPools\" must be"},
      {"scale without max",
       [](json& b) {
         b["scale"] = {{"min", 1}};
       },
       "field \"scale\" must be"},
      {"eleven retry delays",
       [](json& b) {
         b["retry"] = {{"delays", json(std::vector<int>(11, 1000))}};
       },
       "field \"retry\" must be"},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto body = base_body();
    c.change(body);
    EXPECT_NE(joined(schema_errors(body)), "");
    auto error = registry_error(body);
    EXPECT_EQ(error.rfind(c.error, 0), 0u) << error;
  }
}

}  // namespace
}  // namespace dde::registry::test
