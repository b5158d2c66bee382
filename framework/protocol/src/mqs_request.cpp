#include "dde/protocol/mqs_request.hpp"

#include <algorithm>
#include <charconv>

#include "dde/wire/fast_json.hpp"
#include "dde/wire/record.hpp"
#include "header_scanner.hpp"

namespace dde::mqs {
namespace {

using json = nlohmann::json;

// A non-negative whole number; JSON parsed from text holds these as unsigned, a header built in
// memory may hold them as signed.
std::optional<std::uint64_t> as_unsigned(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return std::uint64_t(v.get<std::int64_t>());
  return std::nullopt;
}

// Each check returns an error text, empty when the field is fine.
std::string get_string(const json& h, const char* key, std::string& out) {
  auto it = h.find(key);
  if (it == h.end()) return std::string("missing field \"") + key + "\"";
  if (!it->is_string()) return std::string("field \"") + key + "\" must be a string";
  out = it->get<std::string>();
  return {};
}

std::string get_topic(const json& h, std::string& out) {
  if (auto err = get_string(h, "topic", out); !err.empty()) return err;
  if (!valid_topic(out))
    return "invalid topic \"" + out.substr(0, 200) +
           "\": expected 2 to 4 names of [A-Za-z0-9_-] (at most 100 characters each) joined by '.'";
  return {};
}

std::string get_mode(const json& h, delivery_mode& out) {
  std::string text;
  if (auto err = get_string(h, "mode", text); !err.empty()) return err;
  auto mode = parse_delivery_mode(text);
  if (!mode)
    return "unknown mode \"" + text.substr(0, 100) + "\": expected at-least-once, at-most-once or reply";
  out = *mode;
  return {};
}

std::string get_tags(const json& h, std::vector<std::uint64_t>& out) {
  auto it = h.find("tags");
  if (it == h.end()) return "missing field \"tags\"";
  if (!it->is_array()) return "field \"tags\" must be an array of delivery tags";
  out.reserve(it->size());
  for (auto& t : *it) {
    auto tag = as_unsigned(t);
    if (!tag) return "field \"tags\" must hold non-negative whole numbers";
    out.push_back(*tag);
  }
  return {};
}

/// The optional field `name`, a whole number 1..`max`, into `out` (left as it is when absent).
std::string get_count(const json& h, const char* name, std::uint32_t max, std::uint32_t& out) {
  auto k = h.find(name);
  if (k == h.end()) return {};
  if (!k->is_number_integer()) return "field \"" + std::string(name) + "\" must be a whole number";
  auto n = k->get<std::int64_t>();
  if (n < 1 || n > max)
    return std::string(name) + " " + std::to_string(n) + " is out of range 1.." + std::to_string(max);
  out = static_cast<std::uint32_t>(n);
  return {};
}

parsed_request fail(std::string error, std::optional<std::uint64_t> seq = std::nullopt) {
  parsed_request r;
  r.error = std::move(error);
  r.reject_seq = seq;
  return r;
}

parsed_request ok(request req) {
  parsed_request r;
  r.req = std::move(req);
  return r;
}

parsed_request parse_hello(const json& h) {
  hello_request r;
  auto p = h.find("protocol");
  if (p == h.end()) return fail("missing field \"protocol\"");
  if (!p->is_number_integer()) return fail("field \"protocol\" must be a whole number");
  r.protocol = p->get<std::int64_t>();
  if (auto err = get_string(h, "system", r.system); !err.empty()) return fail(err);
  if (!valid_name(r.system)) return fail("invalid system name \"" + r.system.substr(0, 200) + "\"");
  if (auto err = get_string(h, "instance", r.instance); !err.empty()) return fail(err);
  if (!valid_name(r.instance)) return fail("invalid instance id \"" + r.instance.substr(0, 200) + "\"");
  if (auto d = h.find("deliver"); d != h.end()) {
    if (!d->is_string() || (*d != "binary" && *d != "json"))
      return fail("field \"deliver\" must be \"binary\" or \"json\"");
    r.binary_deliver = *d == "binary";
  }
  return ok(std::move(r));
}

parsed_request parse_enqueue(const json& h) {
  enqueue_request r;
  auto seq = enqueue_seq(h);
  if (auto it = h.find("seq"); it != h.end() && !as_unsigned(*it))
    return fail("field \"seq\" must be a non-negative whole number");
  if (auto err = get_topic(h, r.topic); !err.empty()) return fail(err, seq);
  if (auto err = get_mode(h, r.mode); !err.empty()) return fail(err, seq);
  if (r.mode == delivery_mode::at_least_once && !seq) return fail("an at-least-once enqueue needs a \"seq\"");
  if (auto p = h.find("props"); p != h.end())
    if (auto err = parse_props(*p, r.props); !err.empty()) return fail(err, seq);
  r.seq = seq;
  return ok(std::move(r));
}

parsed_request parse_pull(const json& h) {
  pull_request r;
  if (auto err = get_topic(h, r.topic); !err.empty()) return fail(err);
  if (auto err = get_mode(h, r.mode); !err.empty()) return fail(err);
  auto c = h.find("credit");
  if (c == h.end()) return fail("missing field \"credit\"");
  if (!c->is_number_integer()) return fail("field \"credit\" must be a whole number");
  auto credit = c->get<std::int64_t>();
  if (credit < 1 || credit > max_credit)
    return fail("credit " + std::to_string(credit) + " is out of range 1.." + std::to_string(max_credit));
  r.credit = static_cast<std::uint32_t>(credit);
  if (auto err = get_count(h, "consumers", max_consumers, r.consumers); !err.empty()) return fail(err);
  if (auto err = get_count(h, "partitions", max_partitions, r.partitions); !err.empty()) return fail(err);
  if (r.partitions) {
    if (auto err = get_string(h, "key", r.key); !err.empty()) return fail(err);
    if (!valid_name(r.key)) return fail("invalid partition key \"" + r.key.substr(0, 200) + "\"");
  } else if (h.contains("key")) {
    return fail("field \"key\" needs \"partitions\"");
  }
  return ok(std::move(r));
}

parsed_request parse_nack(const json& h) {
  nack_request r;
  if (auto err = get_tags(h, r.tags); !err.empty()) return fail(err);
  auto q = h.find("requeue");
  if (q == h.end()) return fail("missing field \"requeue\"");
  if (!q->is_boolean()) return fail("field \"requeue\" must be true or false");
  r.requeue = q->get<bool>();
  return ok(std::move(r));
}

parsed_request parse_pause(const json& h) {
  pause_request r;
  if (auto err = get_topic(h, r.topic); !err.empty()) return fail(err);
  auto m = h.find("ms");
  if (m == h.end()) return fail("missing field \"ms\"");
  if (!m->is_number_integer()) return fail("field \"ms\" must be a whole number of milliseconds");
  // Compared as sent: an unsigned value beyond INT64_MAX must not wrap into the range.
  bool in_range = m->is_number_unsigned()
                      ? m->get<std::uint64_t>() >= 1 && m->get<std::uint64_t>() <= max_pause_ms
                      : m->get<std::int64_t>() >= 1 && m->get<std::int64_t>() <= max_pause_ms;
  if (!in_range) return fail("ms " + m->dump() + " is out of range 1.." + std::to_string(max_pause_ms));
  r.ms = m->get<std::uint32_t>();
  if (h.contains("reason")) {
    if (auto err = get_string(h, "reason", r.reason); !err.empty()) return fail(err);
    if (auto n = utf8_length(r.reason); n > max_pause_reason)
      return fail("reason of " + std::to_string(n) + " characters exceeds " +
                  std::to_string(max_pause_reason));
  }
  return ok(std::move(r));
}

}  // namespace

std::size_t utf8_length(std::string_view text) {
  std::size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xc0) != 0x80) ++n;  // every byte but continuation bytes starts a character
  return n;
}

std::string_view utf8_prefix(std::string_view text, std::size_t chars) {
  std::size_t cut = 0, n = 0;
  while (cut < text.size() && n < chars) {
    ++cut;
    while (cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) ++cut;
    ++n;
  }
  return text.substr(0, cut);
}

std::optional<enqueue_request> parse_enqueue_header(std::string_view header) {
  header_scanner s(header);
  enqueue_request r;
  std::string mode;
  if (!s.literal(R"({"action":"enqueue","topic":)") || !s.string(r.topic) || !s.literal(R"(,"mode":)") ||
      !s.string(mode))
    return std::nullopt;
  auto m = parse_delivery_mode(mode);
  if (!m || !valid_topic(r.topic)) return std::nullopt;
  r.mode = *m;
  if (s.literal(R"(,"seq":)")) {
    std::uint64_t seq = 0;
    if (!s.number(seq)) return std::nullopt;
    r.seq = seq;
  } else if (r.mode == delivery_mode::at_least_once) {
    return std::nullopt;
  }
  if (s.literal(R"(,"props":{)") &&
      (!scan_props(s, r.props, props_of::enqueue) || !enqueue_props_as_parsed(r.props)))
    return std::nullopt;
  if (!s.literal("}") || !s.at_end()) return std::nullopt;
  return r;
}

std::optional<std::uint64_t> enqueue_seq(const nlohmann::json& header) {
  auto it = header.find("seq");
  if (it == header.end()) return std::nullopt;
  return as_unsigned(*it);
}

parsed_request parse_request(const nlohmann::json& header) {
  if (!header.is_object()) return fail("header is not a JSON object");
  auto a = header.find("action");
  if (a == header.end() || !a->is_string()) return fail("header has no string \"action\"");
  const auto& action = a->get_ref<const std::string&>();
  if (action == "enqueue") return parse_enqueue(header);
  if (action == "ack") {
    ack_request r;
    if (auto err = get_tags(header, r.tags); !err.empty()) return fail(err);
    return ok(std::move(r));
  }
  if (action == "pull") return parse_pull(header);
  if (action == "nack") return parse_nack(header);
  if (action == "cancel") {
    cancel_request r;
    if (auto err = get_topic(header, r.topic); !err.empty()) return fail(err);
    return ok(std::move(r));
  }
  if (action == "hello") return parse_hello(header);
  if (action == "pause") return parse_pause(header);
  if (action == "depth") {
    depth_request r;
    if (auto err = get_topic(header, r.topic); !err.empty()) return fail(err);
    return ok(std::move(r));
  }
  return fail("unknown action \"" + action.substr(0, 100) + "\"");
}

namespace {

void put_number(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

/// `{"action":"<action>","topic":<topic>` (the object is left open).
std::string open_header(std::string_view action, std::string_view topic) {
  std::string h;
  h.reserve(48 + topic.size());
  h.append(R"({"action":")").append(action).append(R"(","topic":)");
  wire::append_json_string(h, topic);
  return h;
}

void put_tags(std::string& h, const std::vector<std::uint64_t>& tags) {
  h.append(R"("tags":[)");
  for (std::size_t i = 0; i < tags.size(); ++i) {
    if (i) h.push_back(',');
    put_number(h, tags[i]);
  }
  h.push_back(']');
}

}  // namespace

void append(std::string& out, const hello_request& r) {
  nlohmann::json h{
      {"action", "hello"}, {"protocol", r.protocol}, {"system", r.system}, {"instance", r.instance}};
  if (r.binary_deliver) h["deliver"] = "binary";
  wire::append_record(out, h);
}

void append_enqueue(std::string& out, std::string_view topic, delivery_mode mode,
                    std::optional<std::uint64_t> seq, std::string_view props_json, std::string_view body) {
  auto h = open_header("enqueue", topic);
  h.reserve(h.size() + 48 + props_json.size());
  h.append(R"(,"mode":")").append(to_string(mode)).push_back('"');
  if (seq) {
    h.append(R"(,"seq":)");
    put_number(h, *seq);
  }
  if (!props_json.empty()) h.append(R"(,"props":)").append(props_json);
  h.push_back('}');
  wire::append_raw_record(out, h, body);
}

void append(std::string& out, const pull_request& r) {
  std::uint64_t credit = r.credit;
  while (credit > 0) {
    auto n = std::min<std::uint64_t>(credit, max_credit);
    auto h = open_header("pull", r.topic);
    h.append(R"(,"mode":")").append(to_string(r.mode)).append(R"(","credit":)");
    put_number(h, n);
    if (r.consumers) {
      h.append(R"(,"consumers":)");
      put_number(h, r.consumers);
    }
    if (r.partitions) {  // the key is a name: no escaping
      h.append(R"(,"partitions":)");
      put_number(h, r.partitions);
      h.append(R"(,"key":")").append(r.key).push_back('"');
    }
    h.push_back('}');
    wire::append_raw_record(out, h);
    credit -= n;
  }
}

void append(std::string& out, const ack_request& r) {
  std::string h = R"({"action":"ack",)";
  put_tags(h, r.tags);
  h.push_back('}');
  wire::append_raw_record(out, h);
}

void append(std::string& out, const nack_request& r) {
  std::string h = r.requeue ? R"({"action":"nack","requeue":true,)" : R"({"action":"nack","requeue":false,)";
  put_tags(h, r.tags);
  h.push_back('}');
  wire::append_raw_record(out, h);
}

void append(std::string& out, const cancel_request& r) {
  auto h = open_header("cancel", r.topic);
  h.push_back('}');
  wire::append_raw_record(out, h);
}

void append(std::string& out, const pause_request& r) {
  auto h = open_header("pause", r.topic);
  h.append(R"(,"ms":)");
  put_number(h, r.ms);
  // Invalid UTF-8 (an exception's text, say) is replaced, not thrown on.
  h.append(R"(,"reason":)");
  wire::append_json_string(h, utf8_prefix(r.reason, max_pause_reason));
  h.push_back('}');
  wire::append_raw_record(out, h);
}

void append(std::string& out, const depth_request& r) {
  auto h = open_header("depth", r.topic);
  h.push_back('}');
  wire::append_raw_record(out, h);
}

}  // namespace dde::mqs
