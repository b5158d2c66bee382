#pragma once
/// \file
/// A JSON parser for the hot paths (message envelopes, record headers) that gives exactly what
/// `nlohmann::json::parse(text, nullptr, false)` gives, several times faster on the documents we
/// send: long ASCII strings are copied in bulk instead of character by character.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dde::wire {

/// Parses `text` like `nlohmann::json::parse(text, nullptr, false)` (a discarded value when it is
/// not one valid JSON document). A fast path handles ASCII text with simple escapes, integers and
/// decimal numbers; anything else (non-ASCII bytes, `\u` escapes, deep nesting, errors) is parsed
/// by nlohmann, so the result never differs.
nlohmann::json parse_json(std::string_view text);

/// Appends what the escape `\c` stands for when `c` is one of JSON's one-character escapes
/// (`"` `\` `/` `b` `f` `n` `r` `t`) and says so; false for `u` (left to nlohmann) and any other.
inline bool append_unescaped(char c, std::string& out) {
  switch (c) {
    case '"':
    case '\\':
    case '/': out += c; return true;
    case 'b': out += '\b'; return true;
    case 'f': out += '\f'; return true;
    case 'n': out += '\n'; return true;
    case 'r': out += '\r'; return true;
    case 't': out += '\t'; return true;
    default: return false;
  }
}

/// The first byte in [p, end) that ends a run of plain JSON string characters (a quote, a
/// backslash, a control character or a byte above 0x7f), or `end`; 16 bytes a step.
const char* plain_run_end(const char* p, const char* end);

/// Appends `text` as a JSON string (quoted, escaped) to `out`, as `nlohmann::json(text).dump()`
/// would, with invalid UTF-8 replaced by U+FFFD instead of thrown on. Plain ASCII is copied at once.
void append_json_string(std::string& out, std::string_view text);

/// `value` as compact JSON text, exactly what `value.dump(-1, ' ', false, error_handler_t::replace)`
/// gives, several times faster for long ASCII strings (a message's payload): they are copied at once
/// where nlohmann's serializer looks at each byte. Floats and binary values go through nlohmann.
std::string dump_json(const nlohmann::json& value);
/// The same, appended to `out`.
void append_json(std::string& out, const nlohmann::json& value);

/// Appends `"key":"value"` (both escaped as above) to an object being written in `out`, after a
/// comma unless `first`, which it then clears.
void append_json_member(std::string& out, bool& first, std::string_view key, std::string_view value);

}  // namespace dde::wire
