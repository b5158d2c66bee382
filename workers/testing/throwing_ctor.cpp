// A worker whose constructor throws: the host must refuse it with the exception's message.
#include <stdexcept>

#include "dde/worker.hpp"

namespace {
class throwing : public dde::worker {
 public:
  throwing() { throw std::runtime_error("cannot reach the database"); }
  void on_receive(const dde::message&) override { done(); }
};
}  // namespace

DDE_WORKER(throwing)
