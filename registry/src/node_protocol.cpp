#include "node_protocol.hpp"

namespace dde::registry {
namespace {

const ordered_json* field(const ordered_json& frame, const char* name) {
  auto it = frame.find(name);
  return it == frame.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

bool valid_bootstrapper_id(std::string_view id) {
  if (id.empty() || id.size() > 18) return false;
  for (char c : id)
    if (c < '0' || c > '9') return false;
  return true;
}

result<register_frame> parse_register(const ordered_json& frame) {
  using r = result<register_frame>;
  auto type = frame.is_object() ? field(frame, "type") : nullptr;
  if (!type || *type != "register")
    return r::failure("the first frame must be {\"type\": \"register\", ...}");
  auto protocol = field(frame, "protocol");
  if (!protocol || !protocol->is_number_integer())
    return r::failure("field \"protocol\" must be the protocol version, an integer");
  if (protocol->get<long long>() != protocol_version)
    return r::failure("protocol version " + protocol->dump() +
                      " is not supported; this registry speaks version " + std::to_string(protocol_version));
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

result<response_frame> parse_response(const ordered_json& frame) {
  using r = result<response_frame>;
  auto id = field(frame, "id");
  if (!id || !id->is_number_unsigned()) return r::failure("a response needs the request's \"id\"");
  auto ok = field(frame, "ok");
  if (!ok || !ok->is_boolean()) return r::failure("a response needs \"ok\": true or false");
  response_frame out;
  out.id = id->get<std::uint64_t>();
  out.ok = ok->get<bool>();
  if (out.ok) {
    auto res = field(frame, "result");
    out.result = res ? *res : ordered_json::object();
    return out;
  }
  if (auto status = field(frame, "status"); status && status->is_number_integer()) {
    auto s = status->get<long long>();
    if (s >= 400 && s <= 599) out.status = static_cast<int>(s);
  }
  auto error = field(frame, "error");
  out.error = error && error->is_string() ? error->get<std::string>() : "the node failed without saying why";
  return out;
}

std::string registered_frame(const std::string& bootstrapper_id) {
  return ordered_json{
      {"type", "registered"}, {"bootstrapperId", bootstrapper_id}, {"protocol", protocol_version}}
      .dump();
}

std::string error_frame(std::string_view message) {
  return ordered_json{{"type", "error"}, {"error", message}}.dump();
}

std::string request_frame(std::uint64_t id, std::string_view action, const ordered_json& fields) {
  ordered_json frame = {{"type", "request"}, {"id", id}, {"action", action}};
  if (fields.is_object())
    for (auto& [key, value] : fields.items()) frame[key] = value;
  return frame.dump();
}

}  // namespace dde::registry
