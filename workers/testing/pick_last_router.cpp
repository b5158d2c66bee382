// A custom router that always picks the last worker of the pool.
#include "dde/router.hpp"

namespace {
class pick_last : public dde::router_policy {
 public:
  std::vector<std::size_t> select_worker(const dde::message&,
                                         const std::vector<dde::worker_info>& workers) override {
    if (workers.empty()) return {};
    return {workers.size() - 1};
  }
};
}  // namespace

DDE_ROUTER(pick_last)
