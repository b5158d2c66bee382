#include "rest_validation.hpp"

#include <algorithm>
#include <boost/algorithm/string/predicate.hpp>

#include "dde/names.hpp"
#include "dde/net/ws.hpp"

namespace dde::registry {
namespace {

const ordered_json* field(const ordered_json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

/// A required string field; the error or empty.
std::string string_field(const ordered_json& body, const char* key, std::string& out, const char* example) {
  auto f = field(body, key);
  if (!f) return std::string("missing field \"") + key + "\"";
  if (!f->is_string() || f->get_ref<const std::string&>().empty())
    return std::string("field \"") + key + "\" must be a non-empty string (e.g. \"" + example + "\")";
  out = f->get<std::string>();
  return {};
}

/// A required name field (`[A-Za-z0-9_-]+`, it becomes part of queue names); the error or empty.
std::string name_field(const ordered_json& body, const char* key, std::string& out) {
  auto f = field(body, key);
  if (!f) return std::string("missing field \"") + key + "\"";
  if (!f->is_string()) return std::string("field \"") + key + "\" must be a string";
  out = f->get<std::string>();
  return name_error(key, out);
}

}  // namespace

result<ordered_json> parse_body(std::string_view text, bool arrays_too) {
  using r = result<ordered_json>;
  ordered_json body;
  try {
    body = ordered_json::parse(text);
  } catch (const ordered_json::exception& e) {
    // parse_error ("[json.exception.parse_error.101] parse error at line 1, ...") or out_of_range (a
    // number such as 5E555 that no double holds), without the bracketed prefix.
    std::string what = e.what();
    if (auto end = what.find("] "); what.rfind("[json.exception", 0) == 0 && end != std::string::npos)
      what = what.substr(end + 2);
    return r::failure("body is not valid JSON: " + what);
  }
  if (!body.is_object() && !(arrays_too && body.is_array()))
    return r::failure(arrays_too ? "body must be a JSON object or array" : "body must be a JSON object");
  return body;
}

namespace {

/// Why `body` has a field no deploy reads (a typo would otherwise be silently ignored), or "".
std::string unknown_deploy_field(const ordered_json& body) {
  static const std::vector<std::string> request_fields = {"action", "bootstrapperId",
                                                          "messageQueuingSystemServer"};
  const auto& spec_fields = pool_spec_fields();
  auto known = [&](const std::string& key) {
    return std::binary_search(spec_fields.begin(), spec_fields.end(), key) ||
           std::find(request_fields.begin(), request_fields.end(), key) != request_fields.end();
  };
  for (auto& field : body.items()) {
    const auto& key = field.key();
    if (known(key)) continue;
    std::string text = "unknown field \"" + key.substr(0, 100) + "\"";
    std::string hint;
    for (auto* list : {&spec_fields, &request_fields})
      for (auto& candidate : *list)
        if (boost::algorithm::iequals(candidate, key)) hint = candidate;
    if (!hint.empty()) return text + " (did you mean \"" + hint + "\"?)";
    text += "; a deploy body has";
    for (auto* list : {&request_fields, &spec_fields})
      for (auto& candidate : *list) text += " " + candidate;
    return text;
  }
  return {};
}

}  // namespace

result<deploy_request> parse_deploy(const ordered_json& body) {
  using r = result<deploy_request>;
  if (!body.is_object()) return r::failure("body must be a JSON object");
  if (auto unknown = unknown_deploy_field(body); !unknown.empty()) return r::failure(unknown);
  deploy_request out;
  if (auto e = string_field(body, "bootstrapperId", out.bootstrapper_id, "266393094"); !e.empty())
    return r::failure(e);

  auto action = field(body, "action");
  if (!action) return r::failure("missing field \"action\" (use \"action.addIsolate\")");
  if (!action->is_string() || action->get_ref<const std::string&>() != add_isolate_action)
    return r::failure("field \"action\" is " + action->dump() + ": the only action is \"action.addIsolate\"");

  if (auto e = string_field(body, "messageQueuingSystemServer", out.mqs, "ws://127.0.0.1:42043/mqs");
      !e.empty())
    return r::failure(e);
  if (net::parse_ws_url_list(out.mqs).empty())
    return r::failure("field \"messageQueuingSystemServer\" is \"" + out.mqs +
                      "\": expected a WebSocket URL ws://host:port/path (or several, comma-separated, to "
                      "fail over between)");

  // The pool itself: the same parser the isolate systems use, so both agree on what is valid.
  auto spec = dde::parse_pool_spec(nlohmann::json(body));
  if (!spec) return r::failure(spec.error());
  out.spec = std::move(spec.value());
  out.body = body;
  return out;
}

result<shutdown_request> parse_shutdown(const ordered_json& body) {
  using r = result<shutdown_request>;
  if (!body.is_object()) return r::failure("body must be a JSON object");
  shutdown_request out;
  if (auto e = string_field(body, "bootstrapperId", out.bootstrapper_id, "266393094"); !e.empty())
    return r::failure(e);
  if (auto e = name_field(body, "isolateSystemName", out.system); !e.empty()) return r::failure(e);
  if (field(body, "isolateName")) {
    std::string isolate;
    if (auto e = name_field(body, "isolateName", isolate); !e.empty()) return r::failure(e);
    out.isolate = isolate;
  }
  return out;
}

result<kill_request> parse_kill(const ordered_json& body) {
  using r = result<kill_request>;
  if (!body.is_object()) return r::failure("body must be a JSON object");
  kill_request out;
  if (auto e = string_field(body, "bootstrapperId", out.bootstrapper_id, "266393094"); !e.empty())
    return r::failure(e);
  if (auto e = name_field(body, "isolateSystemName", out.system); !e.empty()) return r::failure(e);
  if (auto e = name_field(body, "isolateName", out.isolate); !e.empty()) return r::failure(e);
  if (field(body, "workerId")) {
    std::string id;
    if (auto e = string_field(body, "workerId", id, "3f0c9a52-8d1e-4b7a-9c55-0e2f1a7b6d21"); !e.empty())
      return r::failure(e + "; leave it out to kill every worker of the pool");
    if (id.size() > 100) return r::failure("field \"workerId\" is longer than 100 characters");
    out.worker_id = id;
  }
  return out;
}

result<migrate_request> parse_migrate(const ordered_json& body) {
  using r = result<migrate_request>;
  if (!body.is_object()) return r::failure("body must be a JSON object");
  migrate_request out;
  if (auto e = string_field(body, "bootstrapperId", out.bootstrapper_id, "266393094"); !e.empty())
    return r::failure(e);
  if (auto e = name_field(body, "isolateSystemName", out.system); !e.empty()) return r::failure(e);
  if (auto e = name_field(body, "isolateName", out.isolate); !e.empty()) return r::failure(e);
  if (auto paths = field(body, "workersPaths")) {
    // Checked by the pool parser, so the rules are those of a deploy.
    auto spec = dde::parse_pool_spec({{"isolateSystemName", out.system},
                                      {"isolateName", out.isolate},
                                      {"uri", "x.so"},
                                      {"workersPaths", *paths}});
    if (!spec) return r::failure(spec.error());
    out.workers_paths = spec.value().workers_paths;
  }
  if (field(body, "toBootstrapperId")) {
    std::string to;
    if (auto e = string_field(body, "toBootstrapperId", to, "12133208"); !e.empty()) return r::failure(e);
    if (to == out.bootstrapper_id)
      return r::failure(
          "\"toBootstrapperId\" is the node the pool runs on; give only \"workersPaths\" to move its "
          "workers within that node");
    out.to_bootstrapper_id = to;
  }
  if (!out.workers_paths && !out.to_bootstrapper_id)
    return r::failure(
        "give \"workersPaths\" (new worker paths on the same node) and/or \"toBootstrapperId\" (the "
        "node to move the pool to)");
  return out;
}

}  // namespace dde::registry
