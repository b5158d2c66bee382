#pragma once
/// \file
/// Reads a record batch one record at a time and, unlike `dde::wire::decode_batch`, goes on past a
/// bad record whenever the framing still holds (a header that is not JSON, a body over the limit),
/// so one bad record does not cost the good ones that follow it. An enqueue as hosts write it is read
/// without a JSON tree.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "dde/protocol/mqs_request.hpp"

namespace dde::mqs {

/// One record of a batch, or what is wrong with it.
struct batch_entry {
  std::size_t index = 0;         ///< position in the batch
  std::string_view header_text;  ///< points into the batch
  /// An enqueue read by parse_enqueue_header (the hot path): its header is parsed as JSON only if
  /// header() is asked for it (to report an error).
  std::optional<enqueue_request> enqueue;
  std::string_view body;  ///< points into the batch
  std::string error;      ///< empty for a good record

  /// The header as JSON, discarded (`is_discarded()`) when it did not parse.
  const nlohmann::json& header();

 private:
  friend class batch_reader;
  /// Empty again for the record at `at` (a JSON tree is freed only if one was parsed).
  void reset(std::size_t at);
  nlohmann::json header_{nlohmann::json::value_t::discarded};
  bool parsed_ = false;
};

class batch_reader {
 public:
  batch_reader(std::string_view data, std::size_t max_body) : data_(data), max_body_(max_body) {}

  /// Reads the next record into `out`; false at the end. A record whose framing is broken
  /// (truncated, absurd sizes) is reported once and ends the batch.
  bool next(batch_entry& out);

 private:
  std::string_view data_;
  std::size_t max_body_;
  std::size_t index_ = 0;
  bool broken_ = false;
};

}  // namespace dde::mqs
