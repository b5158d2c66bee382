// A worker whose first message kills the process, as a bad native update may.
#include <cstdlib>

#include "dde/worker.hpp"

namespace {
class crasher : public dde::worker {
 public:
  void on_receive(const dde::message&) override { std::abort(); }
};
}  // namespace

DDE_WORKER(crasher)
