// echo: answers every message with {"echo": <body>, "version": ECHO_VERSION, "worker": <id>}.
// Built twice, as echo_v1 and echo_v2, for hot-deployment tests and demos.
#include "dde/worker.hpp"

#ifndef ECHO_VERSION
#define ECHO_VERSION 1
#endif

namespace {

class echo : public dde::worker {
 public:
  void on_receive(const dde::message& msg) override {
    reply({{"echo", msg.body()}, {"version", ECHO_VERSION}, {"worker", worker_id()}});
    done();
  }
};

}  // namespace

DDE_WORKER(echo)
