#include "dead_letter.hpp"

#include <algorithm>
#include <charconv>

#include "broker_props.hpp"
#include "dde/core/base64.hpp"
#include "dde/envelope.hpp"
#include "dde/mqs/queue_spec.hpp"
#include "dde/names.hpp"
#include "dde/net/target.hpp"
#include "dde/wire/fast_json.hpp"

namespace dde::mqs {
namespace {

using json = nlohmann::json;

std::string header(const dead_message& m, std::string_view name) {
  for (auto& [k, v] : m.props.headers)
    if (k == name) return v;
  return {};
}

/// The host's own dead letter: no AMQP properties, a whole envelope with a `deadLetter` object.
std::optional<envelope> host_dead_letter(const dead_message& m) {
  if (!m.props.app_id.empty()) return std::nullopt;
  auto e = decode_envelope(m.body);
  if (e.from == external_sender || !e.dead_letter.is_object()) return std::nullopt;
  return e;
}

/// Headers a replay leaves out: the broker's record of the death, its delivery count, the old stamp,
/// the MQS's mark of a second copy.
bool broker_header(std::string_view name) {
  return name.rfind("x-death", 0) == 0 || name.rfind("x-first-death-", 0) == 0 ||
         name.rfind("x-last-death-", 0) == 0 || name == "x-delivery-count" || name == published_header ||
         name == resent_header;
}

/// `payload` as a listing shows it: text when it is UTF-8, else base64; cut at 4 KiB.
void put_body(json& out, std::string_view payload) {
  bool truncated = payload.size() > dead_letter_body_shown;
  auto shown = payload.substr(0, dead_letter_body_shown);
  if (valid_utf8(payload)) {
    // Cut on a character boundary: never in the middle of a UTF-8 sequence.
    while (truncated && !shown.empty() && (static_cast<unsigned char>(payload[shown.size()]) & 0xc0) == 0x80)
      shown.remove_suffix(1);
    out["body"] = std::string(shown);
  } else {
    out["body"] = base64_encode(shown);
    out["encoding"] = "base64";
  }
  if (truncated) out["truncated"] = true;
}

std::string address_of(std::string_view topic) {
  std::string a(topic);
  if (auto dot = a.find('.'); dot != std::string::npos) a[dot] = '/';
  return a;
}

result<std::size_t> parse_limit(const json& j) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < 1 ||
      j.get<std::int64_t>() > std::int64_t(dlq_max_scan))
    return result<std::size_t>::failure("\"limit\" must be an integer from 1 to " +
                                        std::to_string(dlq_max_scan));
  return std::size_t(j.get<std::int64_t>());
}

result<dlq_request> parse_body(std::string_view text, bool replay) {
  using R = result<dlq_request>;
  auto j = wire::parse_json(text);
  if (j.is_discarded()) return R::failure("the body is not JSON");
  if (!j.is_object()) return R::failure("the body must be a JSON object");
  dlq_request r;
  r.limit = dlq_max_scan;
  for (auto& [key, value] : j.items()) {
    if (key == "topic") {
      if (!value.is_string()) return R::failure("\"topic\" must be a string");
      r.topic = value.get<std::string>();
    } else if (key == "ids") {
      if (!value.is_array() || value.empty())
        return R::failure("\"ids\" must be a non-empty array of strings");
      for (auto& id : value) {
        if (!id.is_string() || id.get_ref<const std::string&>().empty() ||
            id.get_ref<const std::string&>().size() > 255)
          return R::failure("\"ids\" must hold message ids: strings of 1 to 255 bytes");
        r.ids.push_back(id.get<std::string>());
      }
    } else if (key == "all" && replay) {
      if (!value.is_boolean()) return R::failure("\"all\" must be true or false");
      r.all = value.get<bool>();
    } else if (key == "limit" && replay) {
      auto l = parse_limit(value);
      if (!l) return R::failure_of(l);
      r.limit = l.value();
    } else {
      return R::failure("unknown field \"" + key.substr(0, 100) + "\"; " +
                        (replay ? "a replay takes topic, ids or all, limit" : "a purge takes topic, ids"));
    }
  }
  if (r.topic.empty()) return R::failure("missing field \"topic\"");
  if (!valid_topic(r.topic) || r.topic.rfind("dde.", 0) == 0)
    return R::failure("\"topic\" must be a pool's queue, <system>.<pool> (names of [A-Za-z0-9_-]), not \"" +
                      r.topic.substr(0, 200) + "\"");
  if (replay && r.all == !r.ids.empty())
    return R::failure(r.all ? "give either \"ids\" or \"all\": true, not both"
                            : "say which messages to replay: \"ids\": [...] or \"all\": true");
  if (!replay) r.all = r.ids.empty();
  return r;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n;
    std::uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // the sequence is cut short
    for (std::size_t k = 1; k <= n; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xc0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

std::string dead_letter_id(const dead_message& m) {
  if (!m.props.message_id.empty()) return m.props.message_id;
  if (auto e = host_dead_letter(m)) return e->id;
  return {};
}

json describe_dead_letter(const dead_message& m, std::string_view topic) {
  json out = json::object();
  if (auto e = host_dead_letter(m)) {
    const auto& dl = e->dead_letter;
    out["id"] = e->id;
    out["source"] = "host";
    out["reason"] = dl.value("reason", std::string());
    out["attempts"] = dl.value("attempts", 0);
    if (auto md5 = dl.value("md5", std::string()); !md5.empty()) out["md5"] = md5;
    out["pool"] = dl.value("pool", address_of(topic));
    if (auto at = dl.find("at"); at != dl.end() && at->is_number_integer())
      out["at"] = at->get<std::int64_t>();
    auto payload = e->is_bytes ? e->bytes : e->body.dump(-1, ' ', false, json::error_handler_t::replace);
    out["size"] = payload.size();
    put_body(out, payload);
    return out;
  }
  out["id"] = m.props.message_id;
  out["source"] = "broker";
  auto reason = header(m, "x-first-death-reason");
  out["reason"] = reason.empty() ? m.death_reason : reason;
  // The broker does not carry the pool queue's delivery count over (an x-delivery-count seen here is the
  // dead-letter queue's own, from earlier listings). What the reason says: a quorum queue gives up after
  // its delivery limit plus the first delivery; a DDE pool rejects (supervision dead-letter) at the
  // first failure. Other reasons (expired, maxlen) say nothing of deliveries.
  const auto& why = out["reason"].get_ref<const std::string&>();
  if (why == "delivery_limit")
    out["attempts"] = delivery_limit + 1;
  else if (why == "rejected")
    out["attempts"] = std::max<std::int64_t>(m.death_count, 1);
  out["pool"] = address_of(topic);
  if (m.death_time_s > 0) out["at"] = m.death_time_s * 1000;
  out["size"] = m.body.size();
  put_body(out, m.body);
  return out;
}

replay_message replay_of(const dead_message& m, std::string_view topic) {
  replay_message out;
  if (auto e = host_dead_letter(m)) {
    e->dead_letter = nullptr;
    auto split = split_envelope(*e, topic);
    // split_envelope's props always parse: they are what every enqueue of the host carries.
    parse_props(wire::parse_json(split.props), out.props);
    out.body = std::move(split.payload);
    return out;
  }
  out.props = m.props;
  out.props.published_us = 0;
  std::erase_if(out.props.headers, [](const auto& h) { return broker_header(h.first); });
  out.body = m.body;
  return out;
}

result<dlq_request> parse_dlq_query(std::string_view target) {
  using R = result<dlq_request>;
  dlq_request r;
  auto topic = net::query_param(target, "topic");
  if (!topic || topic->empty())
    return R::failure("missing query parameter \"topic\" (GET /dlq?topic=<system>.<pool>)");
  r.topic = *topic;
  if (!valid_topic(r.topic) || r.topic.rfind("dde.", 0) == 0)
    return R::failure("\"topic\" must be a pool's queue, <system>.<pool> (names of [A-Za-z0-9_-]), not \"" +
                      r.topic.substr(0, 200) + "\"");
  if (auto limit = net::query_param(target, "limit")) {
    std::size_t n = 0;
    auto [end, ec] = std::from_chars(limit->data(), limit->data() + limit->size(), n);
    if (ec != std::errc() || end != limit->data() + limit->size() || n < 1 || n > dlq_max_limit)
      return R::failure("\"limit\" must be an integer from 1 to " + std::to_string(dlq_max_limit));
    r.limit = n;
  }
  if (auto id = net::query_param(target, "id")) {
    if (id->empty() || id->size() > 255) return R::failure("\"id\" must be a message id of 1 to 255 bytes");
    r.id = *id;
  }
  r.all = true;
  return r;
}

result<dlq_request> parse_replay_body(std::string_view body) { return parse_body(body, true); }

result<dlq_request> parse_purge_body(std::string_view body) { return parse_body(body, false); }

}  // namespace dde::mqs
