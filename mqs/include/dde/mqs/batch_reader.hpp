#pragma once
/// \file
/// Reads a record batch one record at a time and, unlike `dde::wire::decode_batch`, goes on past a
/// bad record whenever the framing still holds (a header that is not JSON, a body over the limit),
/// so one bad record does not cost the good ones that follow it.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace dde::mqs {

/// One record of a batch, or what is wrong with it.
struct batch_entry {
  std::size_t index = 0;  ///< position in the batch
  nlohmann::json header;  ///< discarded (`is_discarded()`) when it did not parse
  std::string_view body;  ///< points into the batch
  std::string error;      ///< empty for a good record
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
