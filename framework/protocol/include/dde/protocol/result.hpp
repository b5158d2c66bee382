#pragma once
/// \file
/// The one result type of DDE's daemons and libraries: a value, or why there is none.

#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace dde {

/// Why something failed: a message for people, and a code for programs. Each component that needs
/// codes has its own enum (e.g. runtime::plugin_failure); 0 is that enum's "other"/unspecified value
/// unless the enum says otherwise, and a plain failure carries 0.
struct error_info {
  std::string message;
  int code = 0;
};

/// A value or an error_info. Converts to true when it holds a value.
template <class T>
class result {
 public:
  result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  result(error_info e) : v_(std::in_place_index<1>, std::move(e)) {}

  /// A failure saying `why`, with no code.
  static result failure(std::string why) { return result(error_info{std::move(why), 0}); }
  /// A failure saying `why`, with a component's code.
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  static result failure(std::string why, E code) {
    return result(error_info{std::move(why), static_cast<int>(code)});
  }
  /// The failure of `other` (a result of another type), its message passed through `edit`.
  template <class U, class F>
  static result failure_of(const result<U>& other, F&& edit) {
    return result(error_info{edit(other.error()), other.error_code()});
  }
  template <class U>
  static result failure_of(const result<U>& other) {
    return result(other.failure_info());
  }

  explicit operator bool() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  /// The failure's message (only when it failed).
  const std::string& error() const { return std::get<1>(v_).message; }
  /// The failure's code as the component's enum `E` (only when it failed).
  template <class E>
  E code() const {
    return static_cast<E>(std::get<1>(v_).code);
  }
  int error_code() const { return std::get<1>(v_).code; }
  const error_info& failure_info() const { return std::get<1>(v_); }

 private:
  std::variant<T, error_info> v_;
};

/// A failure whose code is the HTTP status it is to be answered with: what the daemons' requests to
/// each other (registry -> node -> isolate system) fail with.
template <class T>
result<T> http_failure(int status, std::string why) {
  return result<T>(error_info{std::move(why), status});
}
/// The HTTP status of `r`: 200 when it holds a value, its code when that is one (400..599), else 500.
template <class T>
int http_status(const result<T>& r) {
  if (r) return 200;
  int code = r.error_code();
  return code >= 400 && code <= 599 ? code : 500;
}

}  // namespace dde
