// faulty: misbehaves on request, for supervision tests. A message {"action": ...}:
//   "throw"  -> on_receive throws std::runtime_error("asked to throw")
//   "crash"  -> the process dies (std::abort), as native code may
//   "hang"   -> never calls done()
//   anything else -> replies {"ok": true, "worker": <id>} and calls done()
// args: {"throw_in_constructor": false}
#include <cstdlib>
#include <stdexcept>

#include "dde/worker.hpp"

namespace {

class faulty : public dde::worker {
 public:
  faulty() {
    if (args().value("throw_in_constructor", false)) throw std::runtime_error("faulty constructor, as asked");
  }

  void on_receive(const dde::message& msg) override {
    auto action = msg.body().is_object() ? msg.body().value("action", std::string()) : std::string();
    if (action == "throw") throw std::runtime_error("asked to throw");
    if (action == "crash") std::abort();
    if (action == "hang") return;
    reply({{"ok", true}, {"worker", worker_id()}});
    done();
  }
};

}  // namespace

DDE_WORKER(faulty)
