#pragma once
// The throttler worker's settings and control messages, parsed with precise errors and without the
// worker API, so unit tests can feed them:
//   {"dde.throttler": {"setRate": {"messages": N, "perMs": W}}}
//   {"dde.throttler": {"setTarget": "system/isolate"}}     (both keys may come in one message)

#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "dde/throttler.hpp"

namespace dde::samples {

/// The key of a control message's body.
constexpr const char* throttler_control_key = "dde.throttler";

/// True for `system/isolate`, each part 1 to 100 characters of `[A-Za-z0-9_-]` (as the host checks).
inline bool is_pool_address(std::string_view text) {
  auto valid = [](std::string_view part) {
    if (part.empty() || part.size() > 100) return false;
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
    return true;
  };
  auto slash = text.find('/');
  return slash != std::string_view::npos && valid(text.substr(0, slash)) && valid(text.substr(slash + 1));
}

/// `{"messages": N, "perMs": W}` (N in [1, 10^9], W in [1, 86400000]); `where` names it in errors.
/// Throws std::invalid_argument.
inline throttle_rate parse_rate(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    throw std::invalid_argument(where + " must be an object {\"messages\": N, \"perMs\": W}");
  auto number = [&](const char* key, std::int64_t most) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer())
      throw std::invalid_argument(where + "." + key + " must be an integer, got " +
                                  (it == j.end() ? "nothing" : it->dump()));
    auto v = it->get<std::int64_t>();
    if (v < 1 || v > most)
      throw std::invalid_argument(where + "." + key + " must be in [1, " + std::to_string(most) + "], got " +
                                  std::to_string(v));
    return v;
  };
  throttle_rate r;
  r.messages = std::size_t(number("messages", 1000000000));
  r.per = std::chrono::milliseconds(number("perMs", 86400000));
  return r;
}

/// A pool address or throws std::invalid_argument naming `where`.
inline std::string parse_target(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string() || !is_pool_address(j.get_ref<const std::string&>()))
    throw std::invalid_argument(where + " must be a pool address \"system/isolate\", got " + j.dump());
  return j.get<std::string>();
}

/// A parsed control message.
struct throttler_control {
  std::optional<throttle_rate> rate;
  std::optional<std::string> target;
};

/// nullopt when `body` is not a control message (it is then throttled like any other); throws
/// std::invalid_argument, with what is wrong, for a malformed one.
inline std::optional<throttler_control> parse_control(const nlohmann::json& body) {
  if (!body.is_object()) return std::nullopt;
  auto it = body.find(throttler_control_key);
  if (it == body.end()) return std::nullopt;
  std::string where = std::string("\"") + throttler_control_key + "\"";
  if (!it->is_object() || it->empty())
    throw std::invalid_argument(where + " must be an object with setRate and/or setTarget, got " +
                                it->dump());
  throttler_control c;
  for (auto& [key, value] : it->items()) {
    if (key == "setRate")
      c.rate = parse_rate(value, where + ".setRate");
    else if (key == "setTarget")
      c.target = parse_target(value, where + ".setTarget");
    else
      throw std::invalid_argument(where + " has an unknown field \"" + key + "\" (setRate, setTarget)");
  }
  return c;
}

}  // namespace dde::samples
