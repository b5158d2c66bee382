#include "dde/protocol/mqs_records.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

#include "dde/wire/fast_json.hpp"
#include "dde/wire/record.hpp"

namespace dde::mqs {
namespace {

void put_u32(std::string& out, std::size_t v) {
  char b[4] = {char(v & 0xff), char((v >> 8) & 0xff), char((v >> 16) & 0xff), char((v >> 24) & 0xff)};
  out.append(b, 4);
}

void put_number(std::string& out, std::uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

// Appends a record whose header is already JSON text.
void append_raw(std::string& out, std::string_view header, std::string_view body) {
  put_u32(out, header.size());
  out.append(header);
  put_u32(out, body.size());
  out.append(body);
}

}  // namespace

void append_welcome(std::string& out, std::string_view mqs_id) {
  wire::append_record(out, {{"action", "welcome"}, {"protocol", wire::protocol_version}, {"mqs", mqs_id}});
}

void append_deliver(std::string& out, std::string_view topic, std::uint64_t tag, bool redelivered,
                    std::string_view body, const message_props& props) {
  // The header is small; build it in place to avoid a JSON object per message.
  std::size_t start = out.size();
  out.reserve(start + 96 + topic.size() + body.size());
  put_u32(out, 0);  // patched below
  std::size_t hstart = out.size();
  out.append(R"({"action":"deliver","topic":")");
  out.append(topic);
  out.append(R"(","tag":)");
  put_number(out, tag);
  out.append(redelivered ? R"(,"redelivered":true)" : R"(,"redelivered":false)");
  if (props.published_us) {
    out.append(R"(,"published":)");
    put_number(out, props.published_us);
  }
  append_props_field(out, props);
  out.push_back('}');
  std::size_t hsize = out.size() - hstart;
  for (int i = 0; i < 4; ++i) out[start + i] = char((hsize >> (8 * i)) & 0xff);
  put_u32(out, body.size());
  out.append(body);
}

void append_confirm(std::string& out, std::span<const std::uint64_t> seqs) {
  std::string h;
  h.reserve(32 + seqs.size() * 8);
  h.append(R"({"action":"confirm","seqs":[)");
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    if (i) h.push_back(',');
    put_number(h, seqs[i]);
  }
  h.append("]}");
  append_raw(out, h, {});
}

void append_reject(std::string& out, std::span<const std::uint64_t> seqs, std::string_view error) {
  nlohmann::json h{
      {"action", "reject"}, {"seqs", std::vector<std::uint64_t>(seqs.begin(), seqs.end())}, {"error", error}};
  append_raw(out, h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {});
}

void append_depth(std::string& out, std::string_view topic, std::uint32_t messages, std::uint32_t consumers,
                  std::string_view error) {
  nlohmann::json h{{"action", "depth"}, {"topic", topic}, {"messages", messages}, {"consumers", consumers}};
  if (!error.empty()) h["error"] = error;
  append_raw(out, h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {});
}

void append_pause(std::string& out, std::string_view topic, std::uint64_t ms, std::string_view reason,
                  std::string_view origin) {
  nlohmann::json h{{"action", "pause"}, {"topic", topic}, {"ms", ms}, {"reason", reason}, {"origin", origin}};
  append_raw(out, h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), {});
}

void append_error(std::string& out, std::string_view error, std::optional<std::size_t> record,
                  const nlohmann::json* header) {
  nlohmann::json h{{"action", "error"}, {"error", error}};
  if (record) h["record"] = *record;
  if (header && !header->is_discarded()) h["header"] = *header;
  // The offending header may hold invalid UTF-8: replace it rather than fail to report.
  std::string text = h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  append_raw(out, text, {});
}

std::string text_error(std::string_view error) {
  return nlohmann::json{{"action", "error"}, {"error", error}}.dump(-1, ' ', false,
                                                                    nlohmann::json::error_handler_t::replace);
}

namespace {

using parsed = result<mqs_record>;

const nlohmann::json* field(const nlohmann::json& h, const char* key) {
  auto it = h.find(key);
  return it == h.end() ? nullptr : &*it;
}

bool read(const nlohmann::json& h, const char* key, std::string& out) {
  auto f = field(h, key);
  if (!f || !f->is_string()) return false;
  out = f->get<std::string>();
  return true;
}

bool read(const nlohmann::json& h, const char* key, std::uint64_t& out) {
  auto f = field(h, key);
  if (!f || !f->is_number_unsigned()) return false;
  out = f->get<std::uint64_t>();
  return true;
}

bool read(const nlohmann::json& h, const char* key, std::vector<std::uint64_t>& out) {
  auto f = field(h, key);
  if (!f || !f->is_array()) return false;
  out.reserve(f->size());
  for (auto& s : *f) {
    if (!s.is_number_unsigned()) return false;
    out.push_back(s.get<std::uint64_t>());
  }
  return true;
}

parsed bad(const std::string& action, const char* what) {
  return parsed::failure("bad " + action + " record from the MQS: " + what);
}

}  // namespace

result<mqs_record> parse_mqs_record(const nlohmann::json& header) {
  auto a = header.is_object() ? field(header, "action") : nullptr;
  if (!a || !a->is_string()) return parsed::failure("a record from the MQS without a string \"action\"");
  const std::string action = a->get<std::string>();
  if (action == "deliver") {
    deliver_record r;
    if (!read(header, "topic", r.topic)) return bad(action, "no \"topic\"");
    if (!read(header, "tag", r.tag)) return bad(action, "no \"tag\"");
    if (auto f = field(header, "redelivered"); f && f->is_boolean()) r.redelivered = f->get<bool>();
    read(header, "published", r.published_us);
    if (auto it = header.find("props"); it != header.end()) read_delivered_props(*it, r.props);
    return mqs_record(std::move(r));
  }
  if (action == "confirm" || action == "reject") {
    std::vector<std::uint64_t> seqs;
    if (!read(header, "seqs", seqs)) return bad(action, "\"seqs\" is not an array of sequence numbers");
    if (action == "confirm") return mqs_record(confirm_record{std::move(seqs)});
    reject_record r{std::move(seqs), "?"};
    read(header, "error", r.error);
    return mqs_record(std::move(r));
  }
  if (action == "depth") {
    depth_record r;
    if (!read(header, "topic", r.topic)) return bad(action, "no \"topic\"");
    read(header, "messages", r.messages);
    read(header, "consumers", r.consumers);
    read(header, "error", r.error);
    return mqs_record(std::move(r));
  }
  if (action == "pause") {
    pause_record r;
    if (!read(header, "topic", r.topic)) return bad(action, "no \"topic\"");
    if (!read(header, "ms", r.ms)) return bad(action, "no \"ms\"");
    read(header, "reason", r.reason);
    read(header, "origin", r.origin);
    return mqs_record(std::move(r));
  }
  if (action == "welcome") {
    welcome_record r;
    if (auto f = field(header, "protocol"); f && f->is_number_integer()) r.protocol = f->get<std::int64_t>();
    read(header, "mqs", r.mqs);
    return mqs_record(std::move(r));
  }
  if (action == "error") {
    error_record r{"?", std::nullopt, nullptr};
    read(header, "error", r.error);
    std::uint64_t index = 0;
    if (read(header, "record", index)) r.record = std::size_t(index);
    if (auto it = header.find("header"); it != header.end()) r.header = *it;
    return mqs_record(std::move(r));
  }
  return parsed::failure("unknown action \"" + action.substr(0, 100) + "\" from the MQS");
}

namespace {

/// Reads the JSON text append_deliver writes, and nothing else: any other shape is a miss (the
/// caller falls back to a JSON parser), never a different reading.
class header_scanner {
 public:
  explicit header_scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool at_end() const { return p_ == end_; }
  /// Consumes `s` if the text goes on with it.
  bool literal(std::string_view s) {
    if (std::size_t(end_ - p_) < s.size() || std::memcmp(p_, s.data(), s.size()) != 0) return false;
    p_ += s.size();
    return true;
  }
  /// A JSON string of printable ASCII with the simple escapes (none of `\u`).
  bool string(std::string& out) {
    if (!literal("\"")) return false;
    out.clear();
    const char* run = p_;
    while (p_ != end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out.append(run, std::size_t(p_ - run));
        ++p_;
        return true;
      }
      if (c < 0x20 || c >= 0x80) return false;  // invalid JSON, or UTF-8 the JSON parser checks
      if (c != '\\') {
        ++p_;
        continue;
      }
      out.append(run, std::size_t(p_ - run));
      if (++p_ == end_) return false;
      switch (*p_) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        default: return false;
      }
      run = ++p_;
    }
    return false;
  }
  /// An unsigned integer as JSON writes it (no sign, no leading zero, no fraction or exponent)
  /// that fits 64 bits.
  bool number(std::uint64_t& out) {
    const char* start = p_;
    auto [next, ec] = std::from_chars(p_, end_, out);
    if (ec != std::errc() || next == start || (*start == '0' && next - start > 1)) return false;
    p_ = next;
    return p_ == end_ || (*p_ != '.' && *p_ != 'e' && *p_ != 'E');
  }

 private:
  const char* p_;
  const char* end_;
};

/// The members of a "props" object after its `{`, through its `}`.
bool scan_props(header_scanner& s, message_props& out) {
  if (s.literal("}")) return true;
  bool id = false, app = false, type = false, headers = false;
  std::string key;
  do {
    if (!s.string(key) || !s.literal(":")) return false;
    auto once = [](bool& seen) { return !std::exchange(seen, true); };
    if (key == "messageId") {
      if (!once(id) || !s.string(out.message_id)) return false;
    } else if (key == "appId") {
      if (!once(app) || !s.string(out.app_id)) return false;
      if (out.app_id.empty()) out.app_id = external_sender;  // as read_delivered_props
    } else if (key == "contentType") {
      if (!once(type) || !s.string(out.content_type)) return false;
    } else if (key == "headers") {
      if (!once(headers) || !s.literal("{")) return false;
      if (!s.literal("}")) {
        do {
          std::pair<std::string, std::string> h;
          if (!s.string(h.first) || !s.literal(":") || !s.string(h.second)) return false;
          // In name order, as a JSON object reads them; a repeated name is left to the JSON parser.
          auto at = std::lower_bound(out.headers.begin(), out.headers.end(), h,
                                     [](auto& a, auto& b) { return a.first < b.first; });
          if (at != out.headers.end() && at->first == h.first) return false;
          out.headers.insert(at, std::move(h));
        } while (s.literal(","));
        if (!s.literal("}")) return false;
      }
    } else {
      return false;
    }
  } while (s.literal(","));
  return s.literal("}");
}

}  // namespace

std::optional<deliver_record> parse_deliver_header(std::string_view header) {
  header_scanner s(header);
  deliver_record r;
  if (!s.literal(R"({"action":"deliver","topic":)") || !s.string(r.topic) || !s.literal(R"(,"tag":)") ||
      !s.number(r.tag))
    return std::nullopt;
  if (s.literal(R"(,"redelivered":true)"))
    r.redelivered = true;
  else if (!s.literal(R"(,"redelivered":false)"))
    return std::nullopt;
  if (s.literal(R"(,"published":)") && !s.number(r.published_us)) return std::nullopt;
  if (s.literal(R"(,"props":{)") && !scan_props(s, r.props)) return std::nullopt;
  if (!s.literal("}") || !s.at_end()) return std::nullopt;
  return r;
}

result<mqs_record> read_mqs_record(std::string_view header) {
  if (auto d = parse_deliver_header(header)) return mqs_record(std::move(*d));
  auto json = wire::parse_json(header);
  if (json.is_discarded()) return parsed::failure("a record from the MQS whose header is not valid JSON");
  return parse_mqs_record(json);
}

}  // namespace dde::mqs
