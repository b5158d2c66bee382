#include "json_schema_check.hpp"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

namespace dde::test {
namespace {

using json = nlohmann::json;

const std::set<std::string> annotations = {"$schema", "$id",         "$comment", "$defs",
                                           "title",   "description", "examples", "default",
                                           "format",  "deprecated",  "readOnly", "writeOnly"};
const std::set<std::string> keywords = {
    "$ref",    "type",     "enum",     "const",   "properties", "required",  "additionalProperties",
    "items",   "minItems", "maxItems", "minimum", "maximum",    "minLength", "maxLength",
    "pattern", "allOf",    "anyOf",    "oneOf",   "not",        "if",        "then",
    "else"};

bool has_type(const json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer")
    return value.is_number_integer() ||
           (value.is_number_float() && std::trunc(value.get<double>()) == value.get<double>());
  throw std::invalid_argument("unknown type \"" + type + "\" in a schema");
}

std::string short_text(const json& value) {
  auto text = value.dump();
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

/// The folder of `uri` ("schemas/" for "schemas/x.json", "" for "openapi.json").
std::string folder_of(const std::string& uri) {
  auto slash = uri.rfind('/');
  return slash == std::string::npos ? std::string() : uri.substr(0, slash + 1);
}

}  // namespace

void json_schema_check::add_document(std::string uri, json document) {
  documents_.emplace_back(std::move(uri), std::move(document));
}

const json& json_schema_check::document(const std::string& uri) const {
  for (auto& [name, doc] : documents_)
    if (name == uri) return doc;
  throw std::invalid_argument("no document \"" + uri + "\" to resolve a $ref in");
}

std::pair<const json*, std::string> json_schema_check::resolve(const std::string& ref,
                                                               const std::string& base) const {
  auto hash = ref.find('#');
  std::string file = ref.substr(0, hash);
  std::string pointer = hash == std::string::npos ? std::string() : ref.substr(hash + 1);
  std::string uri = file.empty() ? base : folder_of(base) + file;
  const json& doc = document(uri);
  try {
    return {&doc.at(json::json_pointer(pointer)), uri};
  } catch (const json::exception& e) {
    throw std::invalid_argument("$ref \"" + ref + "\" in " + base + " points nowhere: " + e.what());
  }
}

void json_schema_check::require_known_keywords(const json& schema, const std::string& where) {
  if (schema.is_boolean()) return;
  if (!schema.is_object()) throw std::invalid_argument(where + ": a schema must be an object or a boolean");
  for (auto& [key, value] : schema.items()) {
    if (!annotations.count(key) && !keywords.count(key))
      throw std::invalid_argument(where + ": the check does not know schema keyword \"" + key + "\"");
    if (key == "properties" || key == "$defs") {
      for (auto& [name, sub] : value.items()) require_known_keywords(sub, where + "/" + key + "/" + name);
    } else if (key == "allOf" || key == "anyOf" || key == "oneOf") {
      for (std::size_t i = 0; i < value.size(); ++i)
        require_known_keywords(value[i], where + "/" + key + "/" + std::to_string(i));
    } else if (key == "additionalProperties" || key == "items" || key == "not" || key == "if" ||
               key == "then" || key == "else") {
      require_known_keywords(value, where + "/" + key);
    }
  }
}

std::vector<std::string> json_schema_check::errors(const json& value, const json& schema,
                                                   const std::string& base) const {
  std::vector<std::string> out;
  check(value, schema, base, "", out, 0);
  return out;
}

std::vector<std::string> json_schema_check::errors_against(const json& value, const std::string& ref,
                                                           const std::string& base) const {
  auto [schema, uri] = resolve(ref, base);
  return errors(value, *schema, uri);
}

void json_schema_check::check(const json& value, const json& schema, const std::string& base,
                              const std::string& where, std::vector<std::string>& out, int depth) const {
  const std::string at = where.empty() ? "(the value)" : where;
  if (depth > 64) throw std::invalid_argument("schema recursion deeper than 64 at " + at);
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) out.push_back(at + ": no value is allowed here");
    return;
  }
  if (!schema.is_object())
    throw std::invalid_argument("a schema must be an object or a boolean, got " + short_text(schema));
  for (auto& [key, unused] : schema.items())
    if (!annotations.count(key) && !keywords.count(key))
      throw std::invalid_argument("the check does not know schema keyword \"" + key + "\" (at " + at + ")");

  auto fail = [&](const std::string& why) { out.push_back(at + ": " + why); };
  auto sub = [&](const json& v, const json& s, const std::string& w) {
    std::vector<std::string> errors;
    check(v, s, base, w, errors, depth + 1);
    return errors;
  };
  auto add = [&](std::vector<std::string> errors) { out.insert(out.end(), errors.begin(), errors.end()); };

  if (auto ref = schema.find("$ref"); ref != schema.end()) {
    auto [target, uri] = resolve(ref->get<std::string>(), base);
    std::vector<std::string> errors;
    check(value, *target, uri, where, errors, depth + 1);
    add(std::move(errors));
  }
  if (auto type = schema.find("type"); type != schema.end()) {
    auto types = type->is_array() ? *type : json::array({*type});
    bool any = std::any_of(types.begin(), types.end(),
                           [&](const json& t) { return has_type(value, t.get<std::string>()); });
    if (!any) return fail("is " + short_text(value) + ", not of type " + type->dump());
  }
  if (auto e = schema.find("enum"); e != schema.end() && std::find(e->begin(), e->end(), value) == e->end())
    fail("is " + short_text(value) + ", not one of " + short_text(*e));
  if (auto c = schema.find("const"); c != schema.end() && *c != value)
    fail("is " + short_text(value) + ", not " + short_text(*c));

  if (value.is_object()) {
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    if (auto req = schema.find("required"); req != schema.end())
      for (auto& name : *req)
        if (!value.contains(name.get<std::string>()))
          fail("misses required \"" + name.get<std::string>() + "\"");
    for (auto& [key, v] : value.items()) {
      if (props && props->contains(key)) {
        add(sub(v, (*props)[key], where + "/" + key));
      } else if (auto extra = schema.find("additionalProperties"); extra != schema.end()) {
        if (extra->is_boolean() && !extra->get<bool>())
          fail("has \"" + key + "\", which the schema does not allow");
        else
          add(sub(v, *extra, where + "/" + key));
      }
    }
  }
  if (value.is_array()) {
    if (auto n = schema.find("minItems"); n != schema.end() && value.size() < n->get<std::size_t>())
      fail("has " + std::to_string(value.size()) + " items, fewer than " + n->dump());
    if (auto n = schema.find("maxItems"); n != schema.end() && value.size() > n->get<std::size_t>())
      fail("has " + std::to_string(value.size()) + " items, more than " + n->dump());
    if (auto items = schema.find("items"); items != schema.end())
      for (std::size_t i = 0; i < value.size(); ++i)
        add(sub(value[i], *items, where + "/" + std::to_string(i)));
  }
  if (value.is_number()) {
    if (auto m = schema.find("minimum"); m != schema.end() && value.get<double>() < m->get<double>())
      fail(short_text(value) + " is below the minimum " + m->dump());
    if (auto m = schema.find("maximum"); m != schema.end() && value.get<double>() > m->get<double>())
      fail(short_text(value) + " is above the maximum " + m->dump());
  }
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (auto n = schema.find("minLength"); n != schema.end() && text.size() < n->get<std::size_t>())
      fail(short_text(value) + " is shorter than " + n->dump());
    if (auto n = schema.find("maxLength"); n != schema.end() && text.size() > n->get<std::size_t>())
      fail(short_text(value) + " is longer than " + n->dump());
    if (auto p = schema.find("pattern");
        p != schema.end() && !std::regex_search(text, std::regex(p->get<std::string>())))
      fail(short_text(value) + " does not match " + p->dump());
  }

  if (auto all = schema.find("allOf"); all != schema.end())
    for (auto& s : *all) add(sub(value, s, where));
  auto matching = [&](const json& list) {
    std::size_t n = 0;
    for (auto& s : list) n += sub(value, s, where).empty();
    return n;
  };
  if (auto any = schema.find("anyOf"); any != schema.end() && matching(*any) == 0)
    fail("matches none of anyOf: " + [&] {
      std::string why;
      for (auto& s : *any)
        for (auto& e : sub(value, s, where)) why += (why.empty() ? "" : "; ") + e;
      return why;
    }());
  if (auto one = schema.find("oneOf"); one != schema.end()) {
    auto n = matching(*one);
    if (n != 1) fail("matches " + std::to_string(n) + " of oneOf, not exactly one");
  }
  if (auto no = schema.find("not"); no != schema.end() && sub(value, *no, where).empty())
    fail("matches a schema it must not: " + short_text(*no));
  if (auto cond = schema.find("if"); cond != schema.end()) {
    bool holds = sub(value, *cond, where).empty();
    auto branch = schema.find(holds ? "then" : "else");
    if (branch != schema.end()) add(sub(value, *branch, where));
  }
}

}  // namespace dde::test
