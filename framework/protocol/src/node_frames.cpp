#include "dde/protocol/node_frames.hpp"

namespace dde::protocol {
namespace {

const ordered_json* field(const ordered_json& frame, const char* name) {
  auto it = frame.find(name);
  return it == frame.end() || it->is_null() ? nullptr : &*it;
}

/// A required string field: its value, or the error naming it.
result<std::string> text(const ordered_json& frame, const char* name) {
  auto f = field(frame, name);
  if (!f || !f->is_string())
    return result<std::string>::failure(std::string("field \"") + name + "\" must be a string");
  return f->get<std::string>();
}

/// An optional string field: absent/null is nullopt, anything else but a string an error.
result<std::optional<std::string>> optional_text(const ordered_json& frame, const char* name) {
  auto f = field(frame, name);
  if (!f) return std::optional<std::string>();
  if (!f->is_string())
    return result<std::optional<std::string>>::failure(std::string("field \"") + name +
                                                       "\" must be a string");
  return std::optional<std::string>(f->get<std::string>());
}

struct pool_names {
  std::string system, isolate;
};
result<pool_names> names(const ordered_json& frame) {
  auto system = text(frame, "isolateSystemName");
  if (!system) return result<pool_names>::failure_of(system);
  auto isolate = text(frame, "isolateName");
  if (!isolate) return result<pool_names>::failure_of(isolate);
  return pool_names{std::move(system).value(), std::move(isolate).value()};
}

using decoded = result<node_request>;

/// "only": {"system": ["pool", ...]} (an empty list: every pool of that system); absent: everything.
decoded decode_describe(const ordered_json& frame) {
  auto only = field(frame, "only");
  if (!only) return node_request(node::describe{});
  constexpr const char* shape = "field \"only\" must map isolate system names to arrays of pool names";
  if (!only->is_object()) return decoded::failure(shape);
  node::describe_scope scope;
  for (auto& [system, pools] : only->items()) {
    if (!pools.is_array()) return decoded::failure(shape);
    auto& names = scope[system];
    for (auto& pool : pools) {
      if (!pool.is_string()) return decoded::failure(shape);
      names.insert(pool.get<std::string>());
    }
  }
  return node_request(node::describe{std::move(scope)});
}

decoded decode(const std::string& action, const ordered_json& frame) {
  if (action == "ping") return node_request(node::ping{});
  if (action == "describe") return decode_describe(frame);
  if (action == "deploy") {
    auto body = field(frame, "body");
    if (!body || !body->is_object())
      return decoded::failure("field \"body\" must be the deploy body, an object");
    return node_request(node::deploy{*body});
  }
  if (action == "redeploy") {
    auto body = field(frame, "body");
    if (!body || !body->is_object())
      return decoded::failure("field \"body\" must be the deploy body, an object");
    return node_request(node::redeploy{*body});
  }
  if (action == "shutdown") {
    auto system = text(frame, "isolateSystemName");
    if (!system) return decoded::failure_of(system);
    auto isolate = optional_text(frame, "isolateName");
    if (!isolate) return decoded::failure_of(isolate);
    return node_request(node::shutdown{std::move(system).value(), std::move(isolate).value()});
  }
  if (action != "restart" && action != "kill" && action != "setRate" && action != "migrate")
    return decoded::failure("unknown request action \"" + action + "\"");
  auto pool = names(frame);
  if (!pool) return decoded::failure_of(pool);
  auto& [system, isolate] = pool.value();
  if (action == "kill") {
    auto worker = optional_text(frame, "workerId");
    if (!worker) return decoded::failure_of(worker);
    return node_request(node::kill{system, isolate, std::move(worker).value()});
  }
  if (action == "setRate") {
    // Checked by the registry (REST) and by the isolate system that applies them: carried as given.
    auto given = [&](const char* key) {
      auto it = frame.find(key);
      return it == frame.end() ? ordered_json(ordered_json::value_t::discarded) : *it;
    };
    return node_request(node::set_rate{system, isolate, given("rate"), given("maxInFlight")});
  }
  if (action == "migrate") {
    auto paths = field(frame, "workersPaths");
    if (!paths || !paths->is_array())
      return decoded::failure("field \"workersPaths\" must be an array of strings");
    std::vector<std::string> out;
    for (auto& p : *paths) {
      if (!p.is_string()) return decoded::failure("field \"workersPaths\" must be an array of strings");
      out.push_back(p.get<std::string>());
    }
    return node_request(node::migrate{system, isolate, std::move(out)});
  }
  return node_request(node::restart{system, isolate});
}

struct field_writer {
  ordered_json& frame;
  void operator()(const node::deploy& r) const { frame["body"] = r.body; }
  void operator()(const node::redeploy& r) const { frame["body"] = r.body; }
  void operator()(const node::shutdown& r) const {
    frame["isolateSystemName"] = r.system;
    if (r.isolate) frame["isolateName"] = *r.isolate;
  }
  void operator()(const node::describe& r) const {
    if (!r.only) return;
    auto& only = frame["only"] = ordered_json::object();
    for (auto& [system, pools] : *r.only) only[system] = pools;
  }
  void operator()(const node::ping&) const {}
  void operator()(const node::restart& r) const { pool(r.system, r.isolate); }
  void operator()(const node::kill& r) const {
    pool(r.system, r.isolate);
    if (r.worker_id) frame["workerId"] = *r.worker_id;
  }
  void operator()(const node::set_rate& r) const {
    pool(r.system, r.isolate);
    if (!r.rate.is_discarded()) frame["rate"] = r.rate;
    if (!r.max_in_flight.is_discarded()) frame["maxInFlight"] = r.max_in_flight;
  }
  void operator()(const node::migrate& r) const {
    pool(r.system, r.isolate);
    frame["workersPaths"] = r.workers_paths;
  }
  void pool(const std::string& system, const std::string& isolate) const {
    frame["isolateSystemName"] = system;
    frame["isolateName"] = isolate;
  }
};

}  // namespace

bool valid_bootstrapper_id(std::string_view id) {
  if (id.empty() || id.size() > 18) return false;
  for (char c : id)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string encode(const register_frame& f) {
  ordered_json frame = {
      {"type", "register"},
      {"protocol", f.protocol},
      {"bootstrapperId", f.previous_id ? ordered_json(*f.previous_id) : ordered_json(nullptr)},
      {"host", f.host},
      {"port", f.port},
      {"name", f.name}};
  if (f.tls) frame["tls"] = true;
  return frame.dump();
}

result<register_frame> parse_register(const ordered_json& frame) {
  using r = result<register_frame>;
  auto type = frame.is_object() ? field(frame, "type") : nullptr;
  if (!type || *type != "register")
    return r::failure("the first frame must be {\"type\": \"register\", ...}");
  auto protocol = field(frame, "protocol");
  if (!protocol || !protocol->is_number_integer())
    return r::failure("field \"protocol\" must be the protocol version, an integer");
  if (protocol->get<long long>() != node_protocol_version)
    return r::failure("protocol version " + protocol->dump() +
                      " is not supported; this registry speaks version " +
                      std::to_string(node_protocol_version));
  register_frame out;
  if (auto id = field(frame, "bootstrapperId")) {
    if (!id->is_string() || !valid_bootstrapper_id(id->get_ref<const std::string&>()))
      return r::failure("field \"bootstrapperId\" must be null or a string of 1 to 18 digits");
    out.previous_id = id->get<std::string>();
  }
  if (auto host = field(frame, "host")) {
    if (!host->is_string()) return r::failure("field \"host\" must be a string");
    out.host = host->get<std::string>();
  }
  auto port = field(frame, "port");
  if (!port || !port->is_number_integer() || port->get<long long>() < 1 || port->get<long long>() > 65535)
    return r::failure("field \"port\" must be the activator's port, an integer from 1 to 65535");
  out.port = static_cast<std::uint16_t>(port->get<long long>());
  if (auto name = field(frame, "name")) {
    if (!name->is_string()) return r::failure("field \"name\" must be a string");
    out.name = name->get<std::string>();
  }
  if (auto tls = field(frame, "tls")) {
    if (!tls->is_boolean()) return r::failure("field \"tls\" must be true or false");
    out.tls = tls->get<bool>();
  }
  return out;
}

template <class Json>
std::string encode(const basic_response_frame<Json>& f) {
  Json frame = {{"type", "response"}, {"id", f.id}, {"ok", f.ok}};
  if (f.ok) {
    frame["result"] = f.result;
  } else {
    frame["status"] = f.status;
    frame["error"] = f.error;
  }
  return frame.dump(-1, ' ', false, Json::error_handler_t::replace);
}

template <class Json>
result<basic_response_frame<Json>> parse_response(const Json& frame) {
  using r = result<basic_response_frame<Json>>;
  auto field = [&](const char* name) -> const Json* {
    auto it = frame.find(name);
    return it == frame.end() || it->is_null() ? nullptr : &*it;
  };
  auto id = field("id");
  if (!id || !id->is_number_unsigned()) return r::failure("a response needs the request's \"id\"");
  auto ok = field("ok");
  if (!ok || !ok->is_boolean()) return r::failure("a response needs \"ok\": true or false");
  basic_response_frame<Json> out;
  out.id = id->template get<std::uint64_t>();
  out.ok = ok->template get<bool>();
  if (out.ok) {
    auto res = field("result");
    out.result = res ? *res : Json::object();
    return out;
  }
  if (auto status = field("status"); status && status->is_number_integer()) {
    auto s = status->template get<long long>();
    if (s >= 400 && s <= 599) out.status = static_cast<int>(s);
  }
  auto error = field("error");
  out.error =
      error && error->is_string() ? error->template get<std::string>() : "the node failed without saying why";
  return out;
}

template std::string encode(const basic_response_frame<ordered_json>&);
template std::string encode(const basic_response_frame<nlohmann::json>&);
template result<basic_response_frame<ordered_json>> parse_response(const ordered_json&);
template result<basic_response_frame<nlohmann::json>> parse_response(const nlohmann::json&);

std::string encode(const registered_frame& f) {
  return ordered_json{
      {"type", "registered"}, {"bootstrapperId", f.bootstrapper_id}, {"protocol", node_protocol_version}}
      .dump();
}

std::string encode(const error_frame& f) {
  return ordered_json{{"type", "error"}, {"error", f.error}}.dump(-1, ' ', false,
                                                                  ordered_json::error_handler_t::replace);
}

std::string_view action_of(const node_request& r) {
  static constexpr std::string_view names[] = {"deploy", "shutdown", "describe", "ping",    "restart",
                                               "kill",   "setRate",  "migrate",  "redeploy"};
  static_assert(std::size(names) == std::variant_size_v<node_request>, "a name for every request");
  return names[r.index()];
}

std::string encode(const request_frame& f) {
  ordered_json frame = {{"type", "request"}, {"id", f.id}, {"action", action_of(f.request)}};
  std::visit(field_writer{frame}, f.request);
  return frame.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

std::variant<request_frame, bad_request> parse_request(const ordered_json& frame) {
  auto id = field(frame, "id");
  if (!id || !id->is_number_unsigned())
    return bad_request{0, "a request needs an \"id\", an unsigned integer"};
  auto n = id->get<std::uint64_t>();
  auto action = text(frame, "action");
  if (!action) return bad_request{n, action.error()};
  auto decoded_request = decode(action.value(), frame);
  if (!decoded_request) return bad_request{n, decoded_request.error()};
  return request_frame{n, std::move(decoded_request).value()};
}

result<registry_frame> parse_registry_frame(std::string_view text_frame) {
  using r = result<registry_frame>;
  auto frame = ordered_json::parse(text_frame, nullptr, false);
  if (frame.is_discarded() || !frame.is_object()) return r::failure("frame is not a JSON object");
  auto type = field(frame, "type");
  if (!type || !type->is_string()) return r::failure("frame has no \"type\"");
  const auto& t = type->get_ref<const std::string&>();
  if (t == "registered") {
    auto id = text(frame, "bootstrapperId");
    if (!id || !valid_bootstrapper_id(id.value()))
      return r::failure("field \"bootstrapperId\" must be a string of 1 to 18 digits");
    return registry_frame(registered_frame{std::move(id).value()});
  }
  if (t == "request") {
    auto req = parse_request(frame);
    if (auto* ok = std::get_if<request_frame>(&req)) return registry_frame(std::move(*ok));
    return registry_frame(std::get<bad_request>(std::move(req)));
  }
  if (t == "error") {
    auto error = field(frame, "error");
    return registry_frame(error_frame{error && error->is_string() ? error->get<std::string>() : "?"});
  }
  return r::failure("unknown frame type \"" + t + "\"");
}

}  // namespace dde::protocol
