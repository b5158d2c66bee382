#pragma once
/// \file
/// Partitioned topics (a partitioned pool's): a message goes to the partition its body field `key`
/// picks, and the MQS processes learn which topics are partitioned from the pulls of their pools.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace dde::mqs {

struct partitioning {
  std::uint32_t count = 0;
  std::string key;  ///< the message body field whose value picks the partition
};

/// The partition of a message: dde::stable_hash (as on a consistentHash ring) of its body field `key`, its
/// value as it is for a string and as JSON otherwise (as the pool's consistentHash router reads it), modulo
/// the count. A body that is no JSON object, or has no such field, goes by `message_id`: spread, in no order.
std::uint32_t partition_of(std::string_view body, const partitioning& p, std::string_view message_id);

/// Which topics are partitioned, as their pools' pulls said. Thread-safe; `empty()` costs the
/// enqueues of an MQS that serves no partitioned pool one atomic load.
class partition_directory {
 public:
  void learn(const std::string& topic, partitioning p);
  std::optional<partitioning> find(const std::string& topic) const;
  bool empty() const { return empty_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, partitioning> topics_;
  std::atomic<bool> empty_{true};
};

}  // namespace dde::mqs
