#include "dde/protocol/mqs_props.hpp"

#include <algorithm>

#include "dde/wire/fast_json.hpp"

namespace dde::mqs {
namespace {

std::string short_string(const nlohmann::json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return {};
  if (!it->is_string()) return std::string("props.") + key + " must be a string";
  out = it->get_ref<const std::string&>();
  return {};
}

std::string too_long(const char* key, const std::string& s) {
  if (s.size() <= max_prop_string) return {};
  return std::string("props.") + key + " of " + std::to_string(s.size()) + " bytes exceeds 255";
}

}  // namespace

std::string props_limits_error(const message_props& p) {
  if (auto e = too_long("messageId", p.message_id); !e.empty()) return e;
  if (auto e = too_long("appId", p.app_id); !e.empty()) return e;
  if (auto e = too_long("contentType", p.content_type); !e.empty()) return e;
  if (p.headers.size() > max_prop_headers)
    return "props.headers has " + std::to_string(p.headers.size()) + " entries, more than 32";
  std::size_t bytes = 0;
  for (auto& [name, value] : p.headers) {
    if (name.empty() || name.size() > max_prop_header_name)
      return "a props.headers name must be 1 to 128 bytes long";
    bytes += name.size() + value.size();
  }
  if (bytes > max_prop_headers_bytes) return "props.headers exceed 65536 bytes in all";
  return {};
}

std::string parse_props(const nlohmann::json& j, message_props& out) {
  if (!j.is_object()) return "field \"props\" must be an object";
  for (auto& [key, value] : j.items())
    if (key != "messageId" && key != "appId" && key != "contentType" && key != "headers")
      return "props." + key.substr(0, 100) + " is not one of messageId, appId, contentType, headers";
  if (auto e = short_string(j, "messageId", out.message_id); !e.empty()) return e;
  if (auto e = short_string(j, "appId", out.app_id); !e.empty()) return e;
  if (auto e = short_string(j, "contentType", out.content_type); !e.empty()) return e;
  if (auto h = j.find("headers"); h != j.end()) {
    if (!h->is_object()) return "props.headers must be an object";
    for (auto& [name, value] : h->items()) {
      if (!value.is_string()) return "props.headers." + name.substr(0, 128) + " must be a string";
      out.headers.emplace_back(name, value.get_ref<const std::string&>());
    }
  }
  if (auto e = props_limits_error(out); !e.empty()) return e;
  // The MQS's stamp, not a sender's (counted in the limits above all the same).
  std::erase_if(out.headers, [](auto& h) { return h.first == published_header; });
  return {};
}

void append_props_field(std::string& out, const message_props& p) {
  if (p.empty()) return;
  out.append(R"(,"props":{)");
  bool first = true;
  if (!p.message_id.empty()) wire::append_json_member(out, first, "messageId", p.message_id);
  if (!p.app_id.empty()) wire::append_json_member(out, first, "appId", p.app_id);
  if (!p.content_type.empty()) wire::append_json_member(out, first, "contentType", p.content_type);
  if (!p.headers.empty()) {
    if (!first) out.push_back(',');
    first = false;
    out.append(R"("headers":{)");
    bool first_header = true;
    for (auto& [name, value] : p.headers) wire::append_json_member(out, first_header, name, value);
    out.push_back('}');
  }
  out.push_back('}');
}

std::string props_json(const message_props& p) {
  std::string field;
  append_props_field(field, p);
  constexpr std::string_view prefix = R"(,"props":)";
  return field.empty() ? field : field.substr(prefix.size());
}

}  // namespace dde::mqs
