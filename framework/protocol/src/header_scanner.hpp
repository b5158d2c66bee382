#pragma once
// The hand readers' scanner (parse_deliver_header, parse_enqueue_header): the hot records' headers
// read without a JSON tree. Private to dde_protocol.

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "dde/protocol/mqs_props.hpp"
#include "dde/wire/fast_json.hpp"

namespace dde::mqs {

/// Reads JSON text of the one shape an encoder of this library writes, and nothing else: any other
/// shape is a miss (the caller falls back to a JSON parser), never a different reading.
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
      // Plain characters: what ends a run is its closing quote, an escape, and what this reader
      // leaves to the JSON parser (control characters: invalid; bytes of UTF-8: checked there).
      p_ = wire::plain_run_end(p_, end_);
      if (p_ == end_) return false;
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out.append(run, std::size_t(p_ - run));
        ++p_;
        return true;
      }
      if (c != '\\') return false;  // invalid JSON, or UTF-8 the JSON parser checks
      out.append(run, std::size_t(p_ - run));
      if (++p_ == end_) return false;
      if (!wire::append_unescaped(*p_, out)) return false;
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

/// Whose "props" object scan_props reads: a delivery's (an empty appId is a message from outside
/// DDE, as read_delivered_props reads it) or an enqueue's (taken as written; its limits are the
/// caller's to check).
enum class props_of { delivery, enqueue };

/// The members of a "props" object after its `{`, through its `}`: messageId, appId, contentType
/// (each once) and a headers object of strings, in name order; false on anything else, a repeated
/// key or header name included.
bool scan_props(header_scanner& s, message_props& out, props_of whose);

/// Whether parse_props would take these properties as they are: each string within
/// max_prop_string, the headers within their limits and none named `published_header` (which
/// parse_props leaves out).
bool enqueue_props_as_parsed(const message_props& p);

}  // namespace dde::mqs
