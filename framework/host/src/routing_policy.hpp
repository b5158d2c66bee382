#pragma once
// How a router picks the workers that get a message: one of the built-in policies of the pool
// ledger (round-robin, random, broadcast, smallest-mailbox, first-reply races), consistent hashing on
// a field of the body, or a custom router plugin's choice. The router asks it and nothing else.

#include <memory>
#include <vector>

#include "dde/message.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/protocol/result.hpp"
#include "routing.hpp"

namespace dde::host {

class routing_policy {
 public:
  virtual ~routing_policy() = default;
  /// The workers that get `m`: empty when none has room (it waits in the router).
  virtual std::vector<std::size_t> pick(const message& m, pool_ledger& ledger) = 0;
  /// The pool's policy by its router type; a custom router plugin is loaded here (an error says why not).
  static result<std::unique_ptr<routing_policy>> make(const pool_spec& spec);
};

}  // namespace dde::host
