#include "dde/protocol/mqs_records.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

#include "dde/names.hpp"
#include "dde/wire/fast_json.hpp"
#include "dde/wire/record.hpp"
#include "header_scanner.hpp"

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

// Writes `v` over the u32 placeholder at `at` (a header's size, known once it is written).
void patch_u32(std::string& out, std::size_t at, std::size_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = char((v >> (8 * i)) & 0xff);
}

void put_u16(std::string& out, std::size_t v) {
  char b[2] = {char(v & 0xff), char((v >> 8) & 0xff)};
  out.append(b, 2);
}

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = char((v >> (8 * i)) & 0xff);
  out.append(b, 8);
}

void put_short(std::string& out, std::string_view s) {
  put_u16(out, s.size());
  out.append(s);
}

// Binary deliver flags (mqs/PROTOCOL.md *Binary deliver*).
constexpr unsigned flag_redelivered = 1, flag_published = 2, known_flags = 3;

/// Whether every field fits the binary header's sizes (u16 strings and header count, u32 values).
bool fits_binary(std::string_view topic, const message_props& p) {
  constexpr std::size_t short_max = 0xffff;
  if (topic.size() > short_max || p.message_id.size() > short_max || p.app_id.size() > short_max ||
      p.content_type.size() > short_max || p.headers.size() > short_max)
    return false;
  for (auto& [name, value] : p.headers)
    if (name.size() > short_max || value.size() > 0xffffffffu) return false;
  return true;
}

void append_binary_deliver(std::string& out, std::string_view topic, std::uint64_t tag, bool redelivered,
                           std::string_view body, const message_props& p) {
  std::size_t start = out.size();
  put_u32(out, 0);  // patched below
  out.push_back(binary_deliver_mark);
  out.push_back(char((redelivered ? flag_redelivered : 0) | (p.published_us ? flag_published : 0)));
  put_u64(out, tag);
  if (p.published_us) put_u64(out, p.published_us);
  put_short(out, topic);
  put_short(out, p.message_id);
  put_short(out, p.app_id);
  put_short(out, p.content_type);
  put_u16(out, p.headers.size());
  for (auto& [name, value] : p.headers) {
    put_short(out, name);
    put_u32(out, value.size());
    out.append(value);
  }
  patch_u32(out, start, out.size() - start - 4);
  put_u32(out, body.size());
  out.append(body);
}

/// Reads the binary header's little-endian fields; every read fails past the end.
class binary_reader {
 public:
  explicit binary_reader(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool at_end() const { return p_ == end_; }
  template <class T>
  bool number(T& out, int bytes) {
    if (end_ - p_ < bytes) return false;
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p_[i]);
    p_ += bytes;
    out = T(v);
    return true;
  }
  bool bytes(std::string& out, std::size_t n) {
    if (std::size_t(end_ - p_) < n) return false;
    out.assign(p_, n);
    p_ += n;
    return true;
  }
  bool short_string(std::string& out) {
    std::size_t n = 0;
    return number(n, 2) && bytes(out, n);
  }

 private:
  const char* p_;
  const char* end_;
};

// Appends a record whose header is already JSON text.
void append_raw(std::string& out, std::string_view header, std::string_view body) {
  put_u32(out, header.size());
  out.append(header);
  put_u32(out, body.size());
  out.append(body);
}

}  // namespace

void append_welcome(std::string& out, std::string_view mqs_id, bool binary) {
  nlohmann::json h{{"action", "welcome"}, {"protocol", wire::protocol_version}, {"mqs", mqs_id}};
  if (binary) h["deliver"] = "binary";
  wire::append_record(out, h);
}

void append_deliver(std::string& out, std::string_view topic, std::uint64_t tag, bool redelivered,
                    std::string_view body, const message_props& props, deliver_header form) {
  if (form == deliver_header::binary && fits_binary(topic, props))
    return append_binary_deliver(out, topic, tag, redelivered, body, props);
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
  patch_u32(out, start, out.size() - hstart);
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
    if (!valid_topic(r.topic)) return bad(action, "its \"topic\" is not a topic name");
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
    std::string deliver;
    r.binary = read(header, "deliver", deliver) && deliver == "binary";
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

std::optional<deliver_record> parse_deliver_header(std::string_view header) {
  header_scanner s(header);
  deliver_record r;
  if (!s.literal(R"({"action":"deliver","topic":)") || !s.string(r.topic) || !valid_topic(r.topic) ||
      !s.literal(R"(,"tag":)") || !s.number(r.tag))
    return std::nullopt;
  if (s.literal(R"(,"redelivered":true)"))
    r.redelivered = true;
  else if (!s.literal(R"(,"redelivered":false)"))
    return std::nullopt;
  if (s.literal(R"(,"published":)") && !s.number(r.published_us)) return std::nullopt;
  if (s.literal(R"(,"props":{)") && !scan_props(s, r.props, props_of::delivery)) return std::nullopt;
  if (!s.literal("}") || !s.at_end()) return std::nullopt;
  return r;
}

std::optional<deliver_record> parse_binary_deliver(std::string_view header) {
  binary_reader in(header);
  deliver_record r;
  char mark = 0;
  unsigned flags = 0;
  std::size_t headers = 0;
  if (!in.number(mark, 1) || mark != binary_deliver_mark || !in.number(flags, 1) || (flags & ~known_flags) ||
      !in.number(r.tag, 8))
    return std::nullopt;
  r.redelivered = flags & flag_redelivered;
  if ((flags & flag_published) && (!in.number(r.published_us, 8) || r.published_us == 0)) return std::nullopt;
  if (!in.short_string(r.topic) || !valid_topic(r.topic) || !in.short_string(r.props.message_id) ||
      !in.short_string(r.props.app_id) || !in.short_string(r.props.content_type) || !in.number(headers, 2))
    return std::nullopt;
  r.props.headers.resize(headers);
  for (auto& [name, value] : r.props.headers) {
    std::size_t n = 0;
    if (!in.short_string(name) || !in.number(n, 4) || !in.bytes(value, n)) return std::nullopt;
  }
  if (!in.at_end()) return std::nullopt;
  // In name order, one value a name (a repeated one's last), as a JSON header reads: the broker's
  // table may hold a name twice, and the host must see the same delivery whichever header came.
  auto& h = r.props.headers;
  std::stable_sort(h.begin(), h.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, std::string>> once;
  once.reserve(h.size());
  for (auto& header : h)
    if (!once.empty() && once.back().first == header.first)
      once.back().second = std::move(header.second);
    else
      once.push_back(std::move(header));
  h = std::move(once);
  return r;
}

result<mqs_record> read_mqs_record(std::string_view header) {
  if (!header.empty() && header.front() == binary_deliver_mark) {
    if (auto d = parse_binary_deliver(header)) return mqs_record(std::move(*d));
    return parsed::failure("a binary deliver header from the MQS that is truncated or malformed");
  }
  if (auto d = parse_deliver_header(header)) return mqs_record(std::move(*d));
  auto json = wire::parse_json(header);
  if (json.is_discarded()) return parsed::failure("a record from the MQS whose header is not valid JSON");
  return parse_mqs_record(json);
}

}  // namespace dde::mqs
