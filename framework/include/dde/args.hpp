#pragma once
/// \file
/// Typed access to a deployment's `args` (the JSON object of the deploy body). Workers use the
/// members `worker::arg` and `worker::required_arg`; these free functions do the work.

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace dde {

/// A deployment argument is missing or has the wrong type. Thrown from a worker's constructor, it
/// makes the deploy fail with this message (HTTP 400 from the registry).
class argument_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

namespace detail {

/// The text of a nlohmann exception without its "[json.exception.type_error.302] " prefix.
inline std::string json_reason(const std::exception& e) {
  std::string_view what = e.what();
  if (what.substr(0, 16) == "[json.exception.")
    if (auto end = what.find("] "); end != std::string_view::npos) what.remove_prefix(end + 2);
  return std::string(what);
}

/// `args[name]` converted to T; throws `argument_error` naming the argument and the pool.
template <class T>
T convert_arg(const nlohmann::json& value, std::string_view name, std::string_view pool) {
  try {
    return value.get<T>();
  } catch (const nlohmann::json::exception& e) {
    throw argument_error("pool " + std::string(pool) + ": argument \"" + std::string(name) +
                         "\" has the wrong type: " + value.dump() + " (" + json_reason(e) + ")");
  }
}

/// The value of `name` in `args`, or null when absent (or when `args` is not an object).
inline const nlohmann::json* find_arg(const nlohmann::json& args, std::string_view name) {
  if (!args.is_object()) return nullptr;
  auto it = args.find(name);
  if (it == args.end() || it->is_null()) return nullptr;
  return &*it;
}

}  // namespace detail

/// `args[name]` as T, or `fallback` when it is absent or null. Throws `argument_error` naming the
/// argument and `pool` when it is there with another type.
template <class T>
T arg_or(const nlohmann::json& args, std::string_view name, T fallback, std::string_view pool) {
  const auto* value = detail::find_arg(args, name);
  return value ? detail::convert_arg<T>(*value, name, pool) : std::move(fallback);
}

/// `args[name]` as T. Throws `argument_error` naming the argument and `pool` when it is absent,
/// null or has another type.
template <class T>
T required_arg(const nlohmann::json& args, std::string_view name, std::string_view pool) {
  const auto* value = detail::find_arg(args, name);
  if (!value)
    throw argument_error("pool " + std::string(pool) + ": required argument \"" + std::string(name) +
                         "\" is missing from the deployment's args");
  return detail::convert_arg<T>(*value, name, pool);
}

}  // namespace dde
