// scripted: a worker that does what each message tells it, for the worker cell's unit tests.
// A message's body {"steps": [...]} runs its steps in order:
//   "done", "throw", "hold" (nothing), "reply" (to the current message), "rate_limited" (throws
//   dde::rate_limited of 20 ms), {"backoff": ms}, {"send": "sys/pool"}, {"ask": "sys/pool"},
//   {"forward": "sys/pool"}, {"send_after": ms, "to": "sys/pool"}, {"later": ms, "steps": [...]} (after(),
//   then goes on at once),
//   {"writable": [...]} (when_writable()).
// Every message it receives, and its start and kill, are told to "probe/events" with send(), so the
// test sees the worker's life through what the cell hands its owner. args: {"throw_on_start": true,
// "throw_in_constructor": true}.
#include <stdexcept>
#include <string>

#include "dde/worker.hpp"

namespace {

class scripted : public dde::worker {
 public:
  scripted() {
    if (args().value("throw_in_constructor", false))
      throw std::runtime_error("constructor refused, as asked");
  }

  void on_start() override {
    tell({{"event", "start"}, {"worker", worker_id()}});
    if (args().value("throw_on_start", false)) throw std::runtime_error("on_start refused, as asked");
  }

  void before_kill() override { tell({{"event", "kill"}, {"worker", worker_id()}}); }

  void on_receive(const dde::message& msg) override {
    const auto& body = msg.body();
    tell({{"event", msg.is_reply() ? "reply" : "receive"},
          {"worker", worker_id()},
          {"id", msg.id()},
          {"tag", body.is_object() ? body.value("tag", nlohmann::json()) : nlohmann::json()}});
    if (body.is_object() && body.contains("steps")) run(msg, body["steps"]);
  }

 private:
  void tell(nlohmann::json event) { send(std::move(event), "probe/events"); }

  void run(const dde::message& msg, const nlohmann::json& steps) {
    for (auto& step : steps) {
      if (step == "done") {
        done();
      } else if (step == "throw") {
        throw std::runtime_error("thrown as asked");
      } else if (step == "hold") {
      } else if (step == "reply") {
        reply({{"answer", msg.id()}});
      } else if (step == "rate_limited") {
        throw dde::rate_limited(std::chrono::milliseconds(20), "limited as asked");
      } else if (step.contains("backoff")) {
        backoff(std::chrono::milliseconds(step["backoff"].get<int>()), "backed off as asked");
      } else if (step.contains("send")) {
        send({{"from_step", "send"}}, step["send"].get<std::string>());
      } else if (step.contains("send_after")) {
        send_after(std::chrono::milliseconds(step["send_after"].get<long long>()),
                   {{"from_step", "send_after"}}, step["to"].get<std::string>());
      } else if (step.contains("ask")) {
        ask({{"from_step", "ask"}}, step["ask"].get<std::string>());
      } else if (step.contains("forward")) {
        forward(msg, step["forward"].get<std::string>());
      } else if (step.contains("later")) {
        after(std::chrono::milliseconds(step["later"].get<int>()),
              [this, msg, rest = step["steps"]] { run(msg, rest); });
      } else if (step.contains("writable")) {
        when_writable([this, msg, rest = step["writable"]] { run(msg, rest); });
      } else {
        throw std::invalid_argument("unknown step " + step.dump());
      }
    }
  }
};

}  // namespace

DDE_WORKER(scripted)
