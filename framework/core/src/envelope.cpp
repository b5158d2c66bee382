#include "dde/envelope.hpp"

#include "dde/core/base64.hpp"
#include "dde/core/trace.hpp"
#include "dde/wire/fast_json.hpp"

namespace dde {
namespace {

void set_if(nlohmann::json& j, const char* key, const std::string& value) {
  if (!value.empty()) j[key] = value;
}

std::string get_string(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

// A traceparent as read, or empty when it is malformed (the message then starts no trace of its own
// here: the worker handling it starts a new one if this process traces).
std::string valid_traceparent(std::string tp) {
  if (!tp.empty() && !trace::parse(tp)) tp.clear();
  return tp;
}

}  // namespace

std::string encode_envelope(const envelope& e) {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = e.id;
  j["from"] = e.from;
  j["to"] = e.to;
  set_if(j, "replyTo", e.reply_to);
  if (!e.ask_instance.empty()) j["ask"] = {{"instance", e.ask_instance}, {"worker", e.ask_worker}};
  set_if(j, "inReplyTo", e.in_reply_to);
  set_if(j, "toWorker", e.to_worker);
  set_if(j, "traceparent", e.traceparent);
  if (!e.dead_letter.is_null()) j["deadLetter"] = e.dead_letter;
  if (e.is_bytes)
    j["bin"] = base64_encode(e.bytes);
  else
    j["body"] = e.body;
  return j.dump();
}

envelope decode_envelope(std::string_view data) {
  envelope e;
  auto j = wire::parse_json(data);
  bool is_dde = !j.is_discarded() && j.is_object() && j.contains("id") && j.contains("from") &&
                (j.contains("body") || j.contains("bin"));
  if (!is_dde) {
    e.from = external_sender;
    if (j.is_discarded()) {
      e.is_bytes = true;
      e.bytes.assign(data);
    } else {
      e.body = std::move(j);
    }
    return e;
  }
  e.id = get_string(j, "id");
  e.from = get_string(j, "from");
  e.to = get_string(j, "to");
  e.reply_to = get_string(j, "replyTo");
  e.in_reply_to = get_string(j, "inReplyTo");
  e.to_worker = get_string(j, "toWorker");
  e.traceparent = valid_traceparent(get_string(j, "traceparent"));
  // An ask names the asking instance; without one there is nobody to answer (found by envelope_fuzz:
  // a worker without an instance did not survive a re-encode).
  if (auto ask = j.find("ask"); ask != j.end() && ask->is_object()) {
    e.ask_instance = get_string(*ask, "instance");
    if (!e.ask_instance.empty()) e.ask_worker = get_string(*ask, "worker");
  }
  if (auto dl = j.find("deadLetter"); dl != j.end() && dl->is_object()) e.dead_letter = std::move(*dl);
  if (auto bin = j.find("bin"); bin != j.end() && bin->is_string()) {
    e.is_bytes = true;
    if (!base64_decode(bin->get_ref<const std::string&>(), e.bytes)) e.bytes.clear();
  } else {
    e.body = std::move(j["body"]);
  }
  return e;
}

namespace {

constexpr std::string_view octet_stream = "application/octet-stream";

// Where "sys.pool" has its one dot; npos for other topics (reply queues, four-part ones), which
// name no address.
std::size_t address_dot(std::string_view topic) {
  auto dot = topic.find('.');
  if (dot == std::string_view::npos || topic.find('.', dot + 1) != std::string_view::npos)
    return std::string_view::npos;
  return dot;
}

// "sys.pool" -> "sys/pool"; "" for a topic that names no address.
std::string address_of_topic(std::string_view topic) {
  auto dot = address_dot(topic);
  if (dot == std::string_view::npos) return {};
  std::string a(topic);
  a[dot] = '/';
  return a;
}

// address == address_of_topic(topic), without building that string for every message sent.
bool is_address_of_topic(std::string_view address, std::string_view topic) {
  auto dot = address_dot(topic);
  if (dot == std::string_view::npos) return address.empty();
  return address.size() == topic.size() && address[dot] == '/' &&
         address.substr(0, dot) == topic.substr(0, dot) && address.substr(dot + 1) == topic.substr(dot + 1);
}

}  // namespace

broker_message split_envelope(const envelope& e, std::string_view topic) {
  broker_message m;
  m.props.reserve(64 + e.id.size() + e.from.size());
  m.props.push_back('{');
  bool first = true;
  wire::append_json_member(m.props, first, "messageId", e.id);
  wire::append_json_member(m.props, first, "appId", e.from);
  if (e.is_bytes) wire::append_json_member(m.props, first, "contentType", octet_stream);
  std::string headers;
  bool first_header = true;
  auto header = [&](std::string_view key, const std::string& value) {
    if (!value.empty()) wire::append_json_member(headers, first_header, key, value);
  };
  if (!is_address_of_topic(e.to, topic)) header("to", e.to);
  header("replyTo", e.reply_to);
  header("inReplyTo", e.in_reply_to);
  header("toWorker", e.to_worker);
  header("askInstance", e.ask_instance);
  if (!e.ask_instance.empty()) header("askWorker", e.ask_worker);
  if (!e.dead_letter.is_null())
    header("deadLetter", e.dead_letter.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (e.attempt > 0) header("attempt", std::to_string(e.attempt));
  header("traceparent", e.traceparent);
  if (!headers.empty()) {
    m.props.append(",\"headers\":{");
    m.props.append(headers);
    m.props.push_back('}');
  }
  m.props.push_back('}');
  m.payload = e.is_bytes ? e.bytes : wire::dump_json(e.body);
  return m;
}

void read_delivered_props(const nlohmann::json& j, delivered_props& out) {
  if (!j.is_object()) return;
  auto text = [&](const char* key, std::string& into) {
    if (auto it = j.find(key); it != j.end() && it->is_string()) into = it->get<std::string>();
  };
  text("messageId", out.message_id);
  text("appId", out.app_id);
  text("contentType", out.content_type);
  if (out.app_id.empty() && j.contains("appId")) out.app_id = external_sender;
  if (auto h = j.find("headers"); h != j.end() && h->is_object())
    for (auto& [name, value] : h->items())
      if (value.is_string()) out.headers.emplace_back(name, value.get<std::string>());
}

envelope join_envelope(const nlohmann::json& props, std::string_view topic, std::string payload) {
  delivered_props p;
  read_delivered_props(props, p);
  return join_envelope(std::move(p), topic, std::move(payload));
}

namespace {

// The rest of a delivery's envelope once its id and sender are in `e`: the headers, the recipient
// and the body.
void join_rest(envelope& e, const std::vector<std::pair<std::string, std::string>>* headers,
               std::string_view content_type, std::string_view topic, std::string payload) {
  if (headers) {
    for (auto& [name, value] : *headers) {
      if (name == "to")
        e.to = value;
      else if (name == "replyTo")
        e.reply_to = value;
      else if (name == "inReplyTo")
        e.in_reply_to = value;
      else if (name == "toWorker")
        e.to_worker = value;
      else if (name == "askInstance")
        e.ask_instance = value;
      else if (name == "askWorker")
        e.ask_worker = value;
      else if (name == "deadLetter") {
        auto j = value.empty() ? nlohmann::json() : wire::parse_json(value);
        e.dead_letter = j.is_object() ? std::move(j) : nlohmann::json();
      } else if (name == "attempt") {
        // A count this host wrote (1..10 retries); anything else is no count.
        const std::string& a = value;
        e.attempt = (a.size() == 1 && a[0] >= '1' && a[0] <= '9') ? a[0] - '0' : a == "10" ? 10 : 0;
      } else if (name == "traceparent") {
        e.traceparent = valid_traceparent(value);
      }
    }
    if (e.ask_instance.empty()) e.ask_worker.clear();
  }
  if (e.to.empty()) e.to = address_of_topic(topic);
  if (content_type != octet_stream) {
    auto j = wire::parse_json(payload);
    if (!j.is_discarded()) {
      e.body = std::move(j);
      return;
    }
  }
  e.is_bytes = true;
  e.bytes = std::move(payload);
}

}  // namespace

envelope join_envelope(const delivery_props& props, std::string_view topic, std::string payload) {
  if (props.app_id.empty()) return decode_envelope(payload);
  envelope e;
  e.id = props.message_id;
  e.from = props.app_id;
  join_rest(e, props.headers, props.content_type, topic, std::move(payload));
  return e;
}

envelope join_envelope(delivered_props&& props, std::string_view topic, std::string payload) {
  if (props.app_id.empty()) return decode_envelope(payload);
  // Moved, not copied: the host joins every delivery, and a 36-byte id is a heap string.
  envelope e;
  e.id = std::move(props.message_id);
  e.from = std::move(props.app_id);
  join_rest(e, props.headers.empty() ? nullptr : &props.headers, props.content_type, topic,
            std::move(payload));
  return e;
}

// By reference, not by value: a delivery's envelope moved into a parameter and destroyed there cost
// the host about 400 instructions a message (callgrind of a consuming isolate system).
message to_message(const envelope& e, bool redelivered) { return to_message(envelope(e), redelivered); }

message to_message(envelope&& e, bool redelivered) {
  message m;
  m.body_ = std::move(e.body);
  m.bytes_ = std::move(e.bytes);
  m.is_bytes_ = e.is_bytes;
  m.id_ = std::move(e.id);
  m.sender_ = std::move(e.from);
  m.reply_to_ = std::move(e.reply_to);
  m.in_reply_to_ = std::move(e.in_reply_to);
  m.ask_instance_ = std::move(e.ask_instance);
  m.ask_worker_ = std::move(e.ask_worker);
  m.redelivered_ = redelivered;
  m.traceparent_ = std::move(e.traceparent);
  return m;
}

envelope to_envelope(const message& m) {
  envelope e;
  e.body = m.body_;
  e.bytes = m.bytes_;
  e.is_bytes = m.is_bytes_;
  e.id = m.id_;
  e.from = m.sender_;
  e.reply_to = m.reply_to_;
  e.in_reply_to = m.in_reply_to_;
  e.ask_instance = m.ask_instance_;
  e.ask_worker = m.ask_worker_;
  e.traceparent = m.traceparent_;
  return e;
}

}  // namespace dde
