#include "dde/wire/fast_json.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace dde::wire {
namespace {

using json = nlohmann::json;

// Nesting deeper than this goes to nlohmann (no recursion limit there, and no deep stack here).
constexpr int max_depth = 128;

// Bytes that end a run of plain string characters: the quote, the backslash, control characters
// (invalid in JSON strings) and non-ASCII bytes (whose UTF-8 nlohmann validates).
constexpr std::array<bool, 256> string_stop = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[std::size_t(c)] = c < 0x20 || c == '"' || c == '\\' || c >= 0x80;
  return t;
}();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

const char* plain_run_end(const char* p, const char* end) {
#ifdef __SSE2__
  // 16 bytes a step: a quote, a backslash, or a byte below 0x20 or above 0x7f (negative as signed).
  const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                _mm_cmplt_epi8(v, space));
    if (int mask = _mm_movemask_epi8(stop)) return p + __builtin_ctz(static_cast<unsigned>(mask));
    p += 16;
  }
#endif
  while (p < end && !string_stop[static_cast<unsigned char>(*p)]) ++p;
  return p;
}

namespace {

/// Recursive descent over the subset; false means "not handled here", never "invalid JSON".
class fast_parser {
 public:
  explicit fast_parser(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  bool document(json& out) {
    skip_ws();
    if (!value(out, 0)) return false;
    skip_ws();
    return p_ == end_;
  }

 private:
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool literal(const char* word, std::size_t n) {
    if (std::size_t(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
    p_ += n;
    return true;
  }

  bool value(json& out, int depth) {
    if (p_ == end_ || depth > max_depth) return false;
    switch (*p_) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': {
        ++p_;
        std::string s;
        if (!string(s)) return false;
        out = std::move(s);
        return true;
      }
      case 't':
        if (!literal("true", 4)) return false;
        out = true;
        return true;
      case 'f':
        if (!literal("false", 5)) return false;
        out = false;
        return true;
      case 'n':
        if (!literal("null", 4)) return false;
        out = nullptr;
        return true;
      default: return number(out);
    }
  }

  // After '{' or '[': steps past `close` when the container is empty.
  bool closes_at_once(char close) {
    ++p_;  // the opening bracket
    skip_ws();
    if (p_ == end_ || *p_ != close) return false;
    ++p_;
    return true;
  }

  enum class next { item, closed, malformed };
  // After a member or an item: past ',' (and the blank after it) or past `close`.
  next after_element(char close) {
    skip_ws();
    if (p_ == end_) return next::malformed;
    if (*p_ == ',') {
      ++p_;
      skip_ws();
      return next::item;
    }
    if (*p_ != close) return next::malformed;
    ++p_;
    return next::closed;
  }

  bool object(json& out, int depth) {
    out = json::object();
    auto& members = *out.get_ptr<json::object_t*>();
    if (closes_at_once('}')) return true;
    for (;;) {
      if (p_ == end_ || *p_ != '"') return false;
      ++p_;
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      skip_ws();
      json v;
      if (!value(v, depth + 1)) return false;
      members.insert_or_assign(std::move(key),
                               std::move(v));  // a repeated key: the last wins, as in nlohmann
      if (auto n = after_element('}'); n != next::item) return n == next::closed;
    }
  }

  bool array(json& out, int depth) {
    out = json::array();
    auto& items = *out.get_ptr<json::array_t*>();
    if (closes_at_once(']')) return true;
    for (;;) {
      items.emplace_back();
      if (!value(items.back(), depth + 1)) return false;
      if (auto n = after_element(']'); n != next::item) return n == next::closed;
    }
  }

  // Moves p_ to the next byte that ends a run of plain string characters (or to the end).
  void skip_plain() { p_ = plain_run_end(p_, end_); }

  // After the opening quote; runs of plain characters are appended at once.
  bool string(std::string& out) {
    const char* run = p_;
    for (;;) {
      skip_plain();
      if (p_ == end_) return false;
      if (*p_ == '"') {
        out.append(run, std::size_t(p_ - run));
        ++p_;
        return true;
      }
      if (*p_ != '\\') return false;  // a control character or a non-ASCII byte
      out.append(run, std::size_t(p_ - run));
      if (++p_ == end_) return false;
      if (!append_unescaped(*p_, out)) return false;  // \u (surrogates, UTF-8) or an invalid escape
      run = ++p_;
    }
  }

  // JSON's number grammar; integers as nlohmann stores them (unsigned when not negative), overflow
  // and anything else unusual left to nlohmann.
  bool number(json& out) {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ < end_ && is_digit(*p_)) ++p_;
    } else {
      return false;
    }
    bool is_float = false;
    if (p_ < end_ && *p_ == '.') {
      is_float = true;
      if (++p_ == end_ || !is_digit(*p_)) return false;
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      is_float = true;
      if (++p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || !is_digit(*p_)) return false;
      while (p_ < end_ && is_digit(*p_)) ++p_;
    }
    if (!is_float) {
      if (*start == '-') {
        std::int64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec != std::errc() || r.ptr != p_) return false;
        out = v;
      } else {
        std::uint64_t v = 0;
        auto r = std::from_chars(start, p_, v);
        if (r.ec != std::errc() || r.ptr != p_) return false;
        out = v;
      }
      return true;
    }
    double v = 0;
    auto r = std::from_chars(start, p_, v);
    if (r.ec != std::errc() || r.ptr != p_ || !std::isfinite(v)) return false;
    out = v;
    return true;
  }

  const char* p_;
  const char* end_;
};

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  if (plain_run_end(text.data(), text.data() + text.size()) == text.data() + text.size()) {
    out.reserve(out.size() + text.size() + 2);
    out.push_back('"');
    out.append(text);
    out.push_back('"');
    return;
  }
  out.append(json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace));
}

void append_json(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::null: out.append("null"); return;
    case json::value_t::boolean: out.append(value.get<bool>() ? "true" : "false"); return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char digits[24];
      auto r = value.is_number_unsigned()
                   ? std::to_chars(digits, digits + sizeof digits, value.get<std::uint64_t>())
                   : std::to_chars(digits, digits + sizeof digits, value.get<std::int64_t>());
      out.append(digits, r.ptr);
      return;
    }
    case json::value_t::string: append_json_string(out, value.get_ref<const std::string&>()); return;
    case json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (auto& element : value) {
        if (!first) out.push_back(',');
        first = false;
        append_json(out, element);
      }
      out.push_back(']');
      return;
    }
    case json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, it.key());
        out.push_back(':');
        append_json(out, it.value());
      }
      out.push_back('}');
      return;
    }
    default:  // floats (nlohmann's own shortest form), binary, discarded
      out.append(value.dump(-1, ' ', false, json::error_handler_t::replace));
      return;
  }
}

std::string dump_json(const json& value) {
  std::string out;
  append_json(out, value);
  return out;
}

void append_json_member(std::string& out, bool& first, std::string_view key, std::string_view value) {
  if (!first) out.push_back(',');
  first = false;
  append_json_string(out, key);
  out.push_back(':');
  append_json_string(out, value);
}

json parse_json(std::string_view text) {
  json out;
  if (fast_parser(text).document(out)) return out;
  return json::parse(text, nullptr, false);
}

}  // namespace dde::wire
