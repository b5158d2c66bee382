#include "pause_broadcast.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dde/names.hpp"
#include "dde/protocol/mqs_request.hpp"

namespace dde::mqs {
namespace {

constexpr int format_version = 1;
constexpr std::size_t max_origin = 300;

decoded_pause_broadcast fail(std::string error) {
  decoded_pause_broadcast d;
  d.error = std::move(error);
  return d;
}

bool string_field(const nlohmann::json& j, const char* key, std::string& out, std::size_t max_chars) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return utf8_length(out) <= max_chars;
}

}  // namespace

std::int64_t epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string encode_pause_broadcast(const pause_broadcast& p) {
  nlohmann::json j{{"v", format_version}, {"topic", p.topic},   {"ms", p.ms},  {"deadline", p.deadline_ms},
                   {"reason", p.reason},  {"origin", p.origin}, {"mqs", p.mqs}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

decoded_pause_broadcast decode_pause_broadcast(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  if (auto v = j.find("v");
      v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != format_version)
    return fail("not format version 1");
  pause_broadcast p;
  if (!string_field(j, "topic", p.topic, 500) || !valid_topic(p.topic)) return fail("no valid \"topic\"");
  auto ms = j.find("ms");
  if (ms == j.end() || !ms->is_number_integer() || ms->get<std::int64_t>() < 1 ||
      ms->get<std::int64_t>() > max_pause_ms)
    return fail("\"ms\" is not a whole number in 1.." + std::to_string(max_pause_ms));
  p.ms = ms->get<std::int64_t>();
  auto deadline = j.find("deadline");
  if (deadline == j.end() || !deadline->is_number_integer()) return fail("no whole-number \"deadline\"");
  p.deadline_ms = deadline->get<std::int64_t>();
  if (!string_field(j, "reason", p.reason, max_pause_reason)) return fail("no valid \"reason\"");
  if (!string_field(j, "origin", p.origin, max_origin)) return fail("no valid \"origin\"");
  if (!string_field(j, "mqs", p.mqs, max_origin)) return fail("no valid \"mqs\"");
  decoded_pause_broadcast d;
  d.pause = std::move(p);
  return d;
}

std::chrono::milliseconds remaining_time(const pause_broadcast& p, std::int64_t now_ms) {
  if (p.deadline_ms <= now_ms) return std::chrono::milliseconds(p.ms);
  // now_ms is positive, so the difference cannot overflow, whatever the deadline.
  return std::chrono::milliseconds(std::min<std::int64_t>(p.deadline_ms - now_ms, p.ms));
}

}  // namespace dde::mqs
