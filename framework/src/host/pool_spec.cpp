#include "host/pool_spec.hpp"

#include "dde/net/ws.hpp"

namespace dde::host {
namespace {

using r = result<pool_spec>;

const nlohmann::json* field(const nlohmann::json& body, const char* name) {
  auto it = body.find(name);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

std::string pool_spec::plugin_path() const {
  constexpr std::string_view file = "file://";
  if (uri.compare(0, file.size(), file) == 0) return uri.substr(file.size());
  return uri;
}

result<pool_spec> parse_pool_spec(const nlohmann::json& body, const std::string& default_system) {
  if (!body.is_object()) return r::failure("the pool spec must be a JSON object");
  pool_spec spec;

  auto name_field = [&](const char* key, std::string& out, const std::string& fallback) -> std::string {
    auto f = field(body, key);
    if (!f) {
      if (fallback.empty()) return std::string("missing field \"") + key + "\"";
      out = fallback;
      return {};
    }
    if (!f->is_string()) return std::string("field \"") + key + "\" must be a string";
    out = f->get<std::string>();
    if (!valid_name(out))
      return std::string("field \"") + key + "\" is \"" + out +
             "\": names must be 1-100 characters from A-Z a-z 0-9 _ -";
    return {};
  };
  if (auto e = name_field("isolateSystemName", spec.system, default_system); !e.empty()) return r::failure(e);
  if (auto e = name_field("isolateName", spec.isolate, {}); !e.empty()) return r::failure(e);

  auto uri = field(body, "uri");
  if (!uri) return r::failure("missing field \"uri\" (the worker plugin: a .so path or file:// URI)");
  if (!uri->is_string() || uri->get_ref<const std::string&>().empty())
    return r::failure("field \"uri\" must be a non-empty string");
  spec.uri = uri->get<std::string>();
  if (spec.uri.rfind("http://", 0) == 0 || spec.uri.rfind("https://", 0) == 0)
    return r::failure("field \"uri\": http(s) plugin URIs are not supported yet; give a local path or file:// URI");

  if (auto paths = field(body, "workersPaths")) {
    if (!paths->is_array() || paths->empty()) return r::failure("field \"workersPaths\" must be a non-empty array");
    if (paths->size() > 1024) return r::failure("field \"workersPaths\" has more than 1024 entries");
    spec.workers_paths.clear();
    for (auto& p : *paths) {
      if (!p.is_string()) return r::failure("every entry of \"workersPaths\" must be a string");
      auto path = p.get<std::string>();
      if (path != "localhost" && !net::parse_ws_url(path))
        return r::failure("workersPaths entry \"" + path +
                          "\" is neither \"localhost\" nor an activator URL ws://host:port/activator");
      spec.workers_paths.push_back(path);
    }
  }

  if (auto router = field(body, "routerType")) {
    if (!router->is_string()) return r::failure("field \"routerType\" must be a string");
    spec.router_type = router->get<std::string>();
    const auto& t = spec.router_type;
    if (t == "roundRobin" || t == "round-robin" || t == "round_robin" || t == "roundrobin") {
      spec.router = router_kind::round_robin;
    } else if (t == "random") {
      spec.router = router_kind::random;
    } else if (t == "broadcast") {
      spec.router = router_kind::broadcast;
    } else if (t.find('/') != std::string::npos || (t.size() > 3 && t.compare(t.size() - 3, 3, ".so") == 0)) {
      spec.router = router_kind::custom;
      spec.router_uri = t.rfind("file://", 0) == 0 ? t.substr(7) : t;
    } else {
      return r::failure("unknown routerType \"" + t +
                        "\": use roundRobin, random, broadcast, or the path of a custom router .so");
    }
  }

  if (auto hot = field(body, "hotDeployment")) {
    if (!hot->is_boolean()) return r::failure("field \"hotDeployment\" must be true or false");
    spec.hot_deployment = hot->get<bool>();
  }
  if (auto args = field(body, "args")) spec.args = *args;

  if (auto mode = field(body, "deliveryMode")) {
    auto parsed = mode->is_string() ? parse_delivery_mode(mode->get<std::string>()) : std::nullopt;
    if (!parsed || *parsed == delivery_mode::reply)
      return r::failure("field \"deliveryMode\" must be \"at-least-once\" or \"at-most-once\"");
    spec.mode = *parsed;
  }
  if (auto credits = field(body, "credits")) {
    if (!credits->is_number_integer() || credits->get<long long>() < 1 || credits->get<long long>() > 4096)
      return r::failure("field \"credits\" must be an integer from 1 to 4096");
    spec.credits = credits->get<int>();
  }
  return spec;
}

nlohmann::json to_json(const pool_spec& spec) {
  return {{"id", spec.addr().str()},
          {"workerUri", spec.uri},
          {"workersCount", spec.workers_paths.size()},
          {"workersPaths", spec.workers_paths},
          {"routerType", spec.router_type},
          {"hotDeployment", spec.hot_deployment},
          {"deliveryMode", std::string(to_string(spec.mode))},
          {"credits", spec.credits},
          {"args", spec.args}};
}

}  // namespace dde::host
