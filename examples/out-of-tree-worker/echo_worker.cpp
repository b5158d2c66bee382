// Answers every message with its body and who answered: args.name, else "echo_worker".
#include <string>

#include "dde/worker.hpp"

class echo_worker : public dde::worker {
 public:
  void on_receive(const dde::message& msg) override {
    reply({{"echo", msg.body()}, {"by", name_}});
    done();
  }

 private:
  std::string name_ = arg<std::string>("name", "echo_worker");
};

DDE_WORKER(echo_worker)
