#include "dde/protocol/control_frames.hpp"

namespace dde::protocol {
namespace {

using json = nlohmann::json;

const json* field(const json& frame, const char* name) {
  auto it = frame.find(name);
  return it == frame.end() || it->is_null() ? nullptr : &*it;
}

/// The pool a request names: "isolateName", a non-empty string.
result<std::string> isolate_of(const json& frame) {
  auto f = field(frame, "isolateName");
  if (!f || !f->is_string() || f->get_ref<const std::string&>().empty())
    return result<std::string>::failure("field \"isolateName\" must be a non-empty string");
  return f->get<std::string>();
}

json given(const json& frame, const char* key) {
  auto it = frame.find(key);
  return it == frame.end() ? json(json::value_t::discarded) : *it;
}

using decoded = result<control_request>;

decoded decode(const std::string& action, const json& frame) {
  if (action == "describe") {
    control::describe d;
    if (auto only = field(frame, "isolateNames")) {
      if (!only->is_array()) return decoded::failure("field \"isolateNames\" must be an array of pool names");
      for (auto& name : *only) {
        if (!name.is_string())
          return decoded::failure("field \"isolateNames\" must be an array of pool names");
        d.isolates.insert(name.get<std::string>());
      }
    }
    return control_request(std::move(d));
  }
  if (action == "shutdown") return control_request(control::shutdown{});
  if (action == "addIsolate") {
    auto spec = field(frame, "spec");
    if (!spec || !spec->is_object())
      return decoded::failure("field \"spec\" must be the pool spec, an object");
    control::add_isolate add{*spec, std::nullopt};
    if (auto t = field(frame, "mqsLinkTimeoutMs")) {
      if (!t->is_number_unsigned() || t->get<std::uint64_t>() == 0 || t->get<std::uint64_t>() > 600000)
        return decoded::failure("field \"mqsLinkTimeoutMs\" must be an integer from 1 to 600000");
      add.link_timeout_ms = t->get<std::uint32_t>();
    }
    return control_request(std::move(add));
  }
  if (action != "removeIsolate" && action != "restartIsolate" && action != "killIsolate" &&
      action != "setRate")
    return decoded::failure("unknown control action \"" + action + "\"");
  auto isolate = isolate_of(frame);
  if (!isolate) return decoded::failure_of(isolate);
  if (action == "removeIsolate") return control_request(control::remove_isolate{isolate.value()});
  if (action == "restartIsolate") return control_request(control::restart_isolate{isolate.value()});
  if (action == "killIsolate") {
    control::kill_isolate k{isolate.value(), std::nullopt};
    if (auto w = field(frame, "workerId")) {
      if (!w->is_string() || w->get_ref<const std::string&>().empty())
        return decoded::failure("field \"workerId\" must be a non-empty string (or absent: every worker)");
      k.worker_id = w->get<std::string>();
    }
    return control_request(std::move(k));
  }
  return control_request(
      control::set_rate{isolate.value(), given(frame, "rate"), given(frame, "maxInFlight")});
}

struct field_writer {
  json& frame;
  void operator()(const control::add_isolate& r) const {
    frame["spec"] = r.spec;
    if (r.link_timeout_ms) frame["mqsLinkTimeoutMs"] = *r.link_timeout_ms;
  }
  void operator()(const control::remove_isolate& r) const { frame["isolateName"] = r.isolate; }
  void operator()(const control::restart_isolate& r) const { frame["isolateName"] = r.isolate; }
  void operator()(const control::kill_isolate& r) const {
    frame["isolateName"] = r.isolate;
    if (r.worker_id) frame["workerId"] = *r.worker_id;
  }
  void operator()(const control::set_rate& r) const {
    frame["isolateName"] = r.isolate;
    if (!r.rate.is_discarded()) frame["rate"] = r.rate;
    if (!r.max_in_flight.is_discarded()) frame["maxInFlight"] = r.max_in_flight;
  }
  void operator()(const control::describe& r) const {
    if (!r.isolates.empty()) frame["isolateNames"] = r.isolates;
  }
  void operator()(const control::shutdown&) const {}
};

}  // namespace

std::string encode(const control_hello& f) {
  json frame = {{"type", "hello"},        {"protocol", f.protocol}, {"system", f.system},
                {"instance", f.instance}, {"pid", f.pid},           {"mqs", f.mqs}};
  if (f.ops_port) frame["opsPort"] = f.ops_port;
  return frame.dump();
}

std::string encode(const control_event& f) {
  json frame = f.fields.is_object() ? f.fields : json::object();
  frame["type"] = "event";
  return frame.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view action_of(const control_request& r) {
  static constexpr std::string_view names[] = {"addIsolate", "removeIsolate", "restartIsolate", "killIsolate",
                                               "setRate",    "describe",      "shutdown"};
  static_assert(std::size(names) == std::variant_size_v<control_request>, "a name for every request");
  return names[r.index()];
}

std::string encode(const control_request_frame& f) {
  json frame = {{"type", "request"}, {"id", f.id}, {"action", action_of(f.request)}};
  std::visit(field_writer{frame}, f.request);
  return frame.dump(-1, ' ', false, json::error_handler_t::replace);
}

result<std::variant<control_request_frame, bad_request>> parse_control_request(std::string_view text) {
  using r = result<std::variant<control_request_frame, bad_request>>;
  auto frame = json::parse(text, nullptr, false);
  if (frame.is_discarded() || !frame.is_object()) return r::failure("frame is not a JSON object");
  auto type = field(frame, "type");
  if (!type || *type != "request") return r::failure("not a request frame");
  auto id = field(frame, "id");
  if (!id || !id->is_number_unsigned()) return r::failure("a request needs an \"id\", an unsigned integer");
  auto n = id->get<std::uint64_t>();
  auto action = field(frame, "action");
  if (!action || !action->is_string())
    return std::variant<control_request_frame, bad_request>(
        bad_request{n, "field \"action\" must be a string"});
  auto request = decode(action->get<std::string>(), frame);
  if (!request) return std::variant<control_request_frame, bad_request>(bad_request{n, request.error()});
  return std::variant<control_request_frame, bad_request>(
      control_request_frame{n, std::move(request).value()});
}

result<host_frame> parse_host_frame(std::string_view text) {
  using r = result<host_frame>;
  auto frame = json::parse(text, nullptr, false);
  if (frame.is_discarded() || !frame.is_object()) return r::failure("frame is not a JSON object");
  auto type = field(frame, "type");
  if (!type || !type->is_string()) return r::failure("frame has no \"type\"");
  const auto& t = type->get_ref<const std::string&>();
  if (t == "response") {
    auto response = parse_response(frame);
    if (!response) return r::failure_of(response);
    return host_frame(std::move(response).value());
  }
  if (t == "event") return host_frame(control_event{std::move(frame)});
  if (t != "hello") return r::failure("unknown frame type \"" + t + "\"");
  control_hello h;
  auto protocol = field(frame, "protocol");
  if (!protocol || !protocol->is_number_integer() || protocol->get<long long>() != control_protocol_version)
    return r::failure("a hello must carry \"protocol\": " + std::to_string(control_protocol_version));
  auto text_field = [&](const char* key, std::string& out) {
    auto f = field(frame, key);
    if (f && f->is_string()) out = f->get<std::string>();
  };
  text_field("system", h.system);
  text_field("instance", h.instance);
  text_field("mqs", h.mqs);
  if (auto pid = field(frame, "pid"); pid && pid->is_number_integer()) h.pid = pid->get<long long>();
  if (auto ops = field(frame, "opsPort");
      ops && ops->is_number_unsigned() && ops->get<std::uint64_t>() <= 65535)
    h.ops_port = static_cast<std::uint16_t>(ops->get<std::uint64_t>());
  return host_frame(std::move(h));
}

}  // namespace dde::protocol
