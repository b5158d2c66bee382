#pragma once
/// \file
/// Custom routers: a plugin `.so` that picks which workers of a pool get a message.

#include <cstddef>
#include <string>
#include <vector>

#include "dde/message.hpp"

#define DDE_ROUTER_ABI_VERSION 1

namespace dde {

/// What a router knows of one worker of its pool.
struct worker_info {
  std::size_t index = 0;      ///< position in the pool
  std::string id;             ///< unique id of the instance
  std::string path;           ///< its `workersPaths` entry ("localhost" or a ws:// activator)
  std::size_t in_flight = 0;  ///< messages handed to it and not yet done
  bool ready = false;         ///< has room for another message
};

/// A routing policy. `select_worker` returns the indices of the workers that get `msg`
/// (one for load balancing, several to replicate it); an empty result means "any ready worker".
class router_policy {
 public:
  virtual ~router_policy() = default;
  virtual std::vector<std::size_t> select_worker(const message& msg,
                                                 const std::vector<worker_info>& workers) = 0;
};

}  // namespace dde

/// Exports `Class` (a `dde::router_policy` with a default constructor) as this plugin's router.
#define DDE_ROUTER(Class)                                                                              \
  extern "C" __attribute__((visibility("default"))) int dde_router_abi_version() {                     \
    return DDE_ROUTER_ABI_VERSION;                                                                     \
  }                                                                                                    \
  extern "C" __attribute__((visibility("default"))) ::dde::router_policy* dde_create_router() {        \
    try {                                                                                              \
      return new Class();                                                                              \
    } catch (...) {                                                                                    \
      return nullptr;                                                                                  \
    }                                                                                                  \
  }                                                                                                    \
  extern "C" __attribute__((visibility("default"))) void dde_destroy_router(::dde::router_policy* r) { \
    delete r;                                                                                          \
  }
