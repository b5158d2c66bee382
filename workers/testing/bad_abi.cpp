// A worker built against another ABI version (DDE_ABI_VERSION=999 on the command line).
#include "dde/worker.hpp"

namespace {
class old_worker : public dde::worker {
 public:
  void on_receive(const dde::message&) override { done(); }
};
}  // namespace

DDE_WORKER(old_worker)
