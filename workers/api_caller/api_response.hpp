#pragma once
// What api_caller makes of an HTTP answer: success, rate limiting with a delay, or a failure with
// a precise reason. Free of the worker API, so a unit test can feed it answers.

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dde/net/http_client.hpp"

namespace dde::samples {

struct api_outcome {
  enum class kind { ok, rate_limited, failed };
  kind what = kind::failed;
  nlohmann::json answer;               ///< ok: the API's JSON answer (its text as a string when not JSON)
  std::chrono::milliseconds delay{0};  ///< rate_limited: how long the API asks to wait
  std::string reason;                  ///< rate_limited and failed: what happened, with the URL
};

/// The longest delay a Retry-After header is taken at (a day); beyond it the header is likely wrong.
constexpr std::chrono::milliseconds max_retry_delay{24LL * 3600 * 1000};

/// Reads a non-negative decimal integer; false for anything else (signs, spaces, an HTTP-date).
inline bool parse_count(std::string_view text, std::int64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

/// The delay a 429 asks for: `Retry-After-Ms` (exact), else `Retry-After` in delay-seconds
/// (RFC 9110; the HTTP-date form is not used by rate limiters we know and falls back), else
/// `fallback`. Capped at `max_retry_delay`. `headers` have lower-case names.
inline std::chrono::milliseconds retry_delay(const std::map<std::string, std::string>& headers,
                                             std::chrono::milliseconds fallback) {
  std::int64_t v = 0;
  if (auto it = headers.find("retry-after-ms"); it != headers.end() && parse_count(it->second, v))
    return std::min(std::chrono::milliseconds(v), max_retry_delay);
  if (auto it = headers.find("retry-after"); it != headers.end() && parse_count(it->second, v))
    return std::min(
        std::chrono::milliseconds(std::min<std::int64_t>(v, max_retry_delay.count() / 1000) * 1000),
        max_retry_delay);
  return fallback;
}

inline std::string excerpt(std::string_view body) {
  constexpr std::size_t most = 200;
  return body.size() <= most ? std::string(body) : std::string(body.substr(0, most)) + "...";
}

/// Classifies the answer to `POST url`: 2xx ok, 429 rate limited, anything else (including no
/// answer at all) failed.
inline api_outcome classify(const net::http_result& r, std::string_view url,
                            std::chrono::milliseconds fallback) {
  api_outcome out;
  std::string where = "POST " + std::string(url);
  if (!r.answered()) {
    out.reason = where + " failed: " + r.error;
    return out;
  }
  if (r.status >= 200 && r.status < 300) {
    out.what = api_outcome::kind::ok;
    out.answer = nlohmann::json::parse(r.body, nullptr, false);
    if (out.answer.is_discarded()) out.answer = r.body;
    return out;
  }
  if (r.status == 429) {
    out.what = api_outcome::kind::rate_limited;
    out.delay = retry_delay(r.headers, fallback);
    out.reason = where + " answered 429 Too Many Requests (retry after " + std::to_string(out.delay.count()) +
                 " ms): " + excerpt(r.body);
    return out;
  }
  out.reason = where + " answered " + std::to_string(r.status) + ": " + excerpt(r.body);
  return out;
}

}  // namespace dde::samples
