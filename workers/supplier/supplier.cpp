// supplier: answers every message with {"echo": <body>, "supplier": <worker id>}, copying the
// asker's "requester" and "n" fields so the asker can check the reply reached the right instance.
#include "dde/worker.hpp"

namespace {

class supplier : public dde::worker {
 public:
  void on_receive(const dde::message& msg) override {
    nlohmann::json answer = {{"echo", msg.body()}, {"supplier", worker_id()}};
    if (msg.body().is_object()) {
      if (msg.body().contains("requester")) answer["requester"] = msg.body()["requester"];
      if (msg.body().contains("n")) answer["n"] = msg.body()["n"];
    }
    reply(std::move(answer));
    done();
  }
};

}  // namespace

DDE_WORKER(supplier)
