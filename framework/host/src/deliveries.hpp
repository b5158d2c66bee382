#pragma once
// The messages a router has handed to its workers and not yet finished, by delivery id: which workers
// still hold each, and what its end needs (where to settle it at the broker, its sub-pool, what a
// retry or a dead letter needs). Runs on the router's strand.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "clock.hpp"
#include "dde/message.hpp"

namespace dde::host {

struct delivery {
  std::uint64_t generation = 0;
  std::uint64_t tag = 0;
  std::vector<std::size_t> pending;  ///< workers that hold it and have not finished it
  bool failed = false;
  std::string sub_key;        ///< its sub-pool
  int attempts = 0;           ///< times it was rate limited so far
  std::string poison_id;      ///< its message id, when the pool counts failures per message
  clock::time_point started;  ///< handed to its first worker: for the handling-time histogram
  // Delayed retry (a pool with `retry.delays`):
  int earlier_failures = 0;                   ///< the envelope's `attempt`
  std::shared_ptr<const message> retry_copy;  ///< what goes to the delay queue if it fails
  std::string failure;                        ///< why a worker failed it (empty: given back unfinished)
  bool canary_failed = false;  ///< a canary worker failed it: back to the queue, whatever the pool says
};

class delivery_table {
 public:
  /// A new delivery under the next id.
  std::pair<std::uint64_t, delivery&> open();
  /// Delivery `id`, or null when it has ended.
  delivery* find(std::uint64_t id);
  /// Delivery `id` while worker `index` holds it, else null.
  delivery* held_by(std::uint64_t id, std::size_t index);
  /// Worker `index` is done with delivery `id`: the delivery, or null when the worker did not hold it
  /// (a late report, e.g. from a replaced stuck worker: each (message, worker) finishes once).
  delivery* release(std::uint64_t id, std::size_t index);
  void erase(std::uint64_t id) { table_.erase(id); }
  /// The deliveries worker `index` holds.
  std::vector<std::uint64_t> held_by(std::size_t index) const;
  /// Each delivery's sub-pool, for describe.
  std::vector<std::string> sub_keys() const;

 private:
  std::unordered_map<std::uint64_t, delivery> table_;
  std::uint64_t next_ = 1;
};

}  // namespace dde::host
