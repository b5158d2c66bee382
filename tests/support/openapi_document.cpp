#include "openapi_document.hpp"

#include <algorithm>
#include <stdexcept>

namespace dde::test {
namespace {

using json = nlohmann::json;

const char* const methods[] = {"get", "put", "post", "delete", "options", "head", "patch", "trace"};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  return s;
}

/// The media type without parameters: "text/plain; version=0.0.4" -> "text/plain".
std::string media_type(const std::string& content_type) {
  auto end = content_type.find(';');
  auto type = content_type.substr(0, end);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  return type;
}

}  // namespace

bool path_matches(const std::string& pattern, const std::string& path) {
  std::size_t i = 0, j = 0;
  while (i < pattern.size() && j < path.size()) {
    if (pattern[i] == '{') {
      auto close = pattern.find('}', i);
      auto slash = path.find('/', j);
      if (slash == j) return false;
      i = close + 1;
      j = slash == std::string::npos ? path.size() : slash;
      continue;
    }
    if (pattern[i++] != path[j++]) return false;
  }
  return i == pattern.size() && j == path.size();
}

openapi_document::openapi_document(json document, json pool_spec_schema) {
  schemas_.add_document("openapi.json", std::move(document));
  schemas_.add_document("schemas/pool-spec.schema.json", std::move(pool_spec_schema));
  for (auto& [path, item] : openapi()["paths"].items())
    for (auto* method : methods)
      if (item.contains(method))
        operations_.push_back({path, upper(method), item[method].value("operationId", ""), item[method]});
}

const openapi_operation& openapi_document::operation(const std::string& id) const {
  for (auto& op : operations_)
    if (op.id == id) return op;
  throw std::out_of_range("no operation \"" + id + "\" in the document");
}

std::set<int> openapi_document::statuses(const openapi_operation& op) const {
  std::set<int> out;
  for (auto& [status, unused] : op.spec["responses"].items()) out.insert(std::stoi(status));
  return out;
}

const json* openapi_document::response(const openapi_operation& op, int status) const {
  auto& responses = op.spec["responses"];
  auto it = responses.find(std::to_string(status));
  if (it == responses.end()) return nullptr;
  if (it->contains("$ref")) return schemas_.resolve((*it)["$ref"].get<std::string>(), "openapi.json").first;
  return &*it;
}

const json& openapi_document::parameter(const json& p) const {
  if (p.contains("$ref")) return *schemas_.resolve(p["$ref"].get<std::string>(), "openapi.json").first;
  return p;
}

std::vector<std::pair<std::string, json>> openapi_document::request_examples(
    const openapi_operation& op) const {
  std::vector<std::pair<std::string, json>> out;
  if (!op.spec.contains("requestBody")) return out;
  auto& media = op.spec["requestBody"]["content"]["application/json"];
  if (media.contains("example")) out.emplace_back("example", media["example"]);
  if (media.contains("examples"))
    for (auto& [name, example] : media["examples"].items()) out.emplace_back(name, example["value"]);
  return out;
}

json openapi_document::request_schema(const openapi_operation& op) const {
  if (!op.spec.contains("requestBody")) return nullptr;
  return op.spec["requestBody"]["content"]["application/json"]["schema"];
}

std::string openapi_document::example_target(const openapi_operation& op) const {
  std::string target = op.path;
  std::string query;
  for (auto& raw : op.spec.value("parameters", json::array())) {
    const auto& p = parameter(raw);
    auto value = p["example"].is_string() ? p["example"].get<std::string>() : p["example"].dump();
    if (p["in"] == "path") {
      auto name = "{" + p["name"].get<std::string>() + "}";
      target.replace(target.find(name), name.size(), value);
    } else if (p["in"] == "query") {
      query += (query.empty() ? "?" : "&") + p["name"].get<std::string>() + "=" + value;
    }
  }
  return target + query;
}

std::vector<std::string> openapi_document::answer_errors(const openapi_operation& op, int status,
                                                         const std::string& content_type,
                                                         const std::string& body) const {
  const std::string what = op.method + " " + op.path + " answered " + std::to_string(status);
  const json* r = response(op, status);
  if (!r) return {what + ", a status the document does not list for it; body: " + body.substr(0, 300)};
  if (!r->contains("content")) return {};
  auto type = media_type(content_type);
  auto media = (*r)["content"].find(type);
  if (media == (*r)["content"].end())
    return {what + " with Content-Type " + content_type + ", which the document does not list"};
  const json& schema = (*media)["schema"];
  json value = body;
  if (type == "application/json") {
    value = json::parse(body, nullptr, false);
    if (value.is_discarded()) return {what + " with a body that is not JSON: " + body.substr(0, 300)};
  }
  auto errors = schemas_.errors(value, schema, "openapi.json");
  for (auto& e : errors) e = what + ": " + e;
  return errors;
}

void openapi_document::check_references() const {
  json_schema_check::require_known_keywords(schemas_.document("schemas/pool-spec.schema.json"),
                                            "schemas/pool-spec.schema.json");
  for (auto& [name, schema] : openapi()["components"]["schemas"].items())
    json_schema_check::require_known_keywords(schema, "#/components/schemas/" + name);
  // Every $ref anywhere resolves.
  std::vector<std::pair<const json*, std::string>> todo = {
      {&openapi(), "openapi.json"},
      {&schemas_.document("schemas/pool-spec.schema.json"), "schemas/pool-spec.schema.json"}};
  while (!todo.empty()) {
    auto [node, base] = todo.back();
    todo.pop_back();
    if (node->is_object()) {
      if (auto ref = node->find("$ref"); ref != node->end() && ref->is_string()) schemas_.resolve(*ref, base);
      for (auto& [key, value] : node->items()) {
        if (key == "schema") json_schema_check::require_known_keywords(value, base + ": a schema");
        if (key == "examples" || key == "example") continue;  // instances, not schemas
        todo.emplace_back(&value, base);
      }
    } else if (node->is_array()) {
      for (auto& value : *node) todo.emplace_back(&value, base);
    }
  }
}

}  // namespace dde::test
