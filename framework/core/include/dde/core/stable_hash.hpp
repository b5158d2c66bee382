#pragma once
// A hash of text that every process and every run agrees on (std::hash does not promise that): what
// places a key on a consistentHash pool's ring and a message in a partitioned pool's partition.

#include <cstdint>
#include <string_view>

namespace dde {

/// FNV-1a, 64 bits, with a final mix, so that keys that differ only in their last characters spread
/// over the whole range.
inline std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

}  // namespace dde
