#include "registry_fake_node.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "dde/net/auth.hpp"
#include "dde/net/ws.hpp"

namespace dde::registry::test {
namespace {

using json = nlohmann::ordered_json;

json success(const json& request, json result) {
  return {{"type", "response"}, {"id", request["id"]}, {"ok", true}, {"result", std::move(result)}};
}

json failure(const json& request, int status, const std::string& error) {
  return {{"type", "response"}, {"id", request["id"]}, {"ok", false}, {"status", status}, {"error", error}};
}

json* find_pool(json& pools, const std::string& system, const std::string& isolate) {
  if (!pools.contains(system)) return nullptr;
  for (auto& pool : pools[system])
    if (pool["id"] == system + "/" + isolate) return &pool;
  return nullptr;
}

/// What a real node would answer to `request`, applied to `pools`.
json answer(json& pools, const json& request) {
  const auto action = request.value("action", "");
  if (action == "describe") return success(request, pools);
  if (action == "deploy") {
    const auto& body = request["body"];
    auto system = body["isolateSystemName"].get<std::string>();
    auto isolate = body["isolateName"].get<std::string>();
    if (find_pool(pools, system, isolate))
      return failure(request, 409, "pool \"" + system + "/" + isolate + "\" already runs on this node");
    auto paths = body.value("workersPaths", json::array({"localhost"}));
    json pool = {{"id", system + "/" + isolate},
                 {"workerUri", body["uri"]},
                 {"workersCount", paths.size()},
                 {"workersPaths", paths},
                 {"routerType", body.value("routerType", "roundRobin")},
                 {"hotDeployment", body.value("hotDeployment", true)},
                 {"deliveryMode", body.value("deliveryMode", "at-least-once")},
                 {"credits", body.value("credits", 8)},
                 {"args", body.value("args", json::object())},
                 {"messageQueuingSystemServer", body["messageQueuingSystemServer"]}};
    if (!pools.contains(system)) pools[system] = json::array();
    pools[system].push_back(pool);
    return success(
        request,
        {{"isolateSystemName", system}, {"isolateName", isolate}, {"instance", "instance-" + system}});
  }
  if (action == "shutdown") {
    auto system = request["isolateSystemName"].get<std::string>();
    if (!pools.contains(system))
      return failure(request, 404, "no isolate system \"" + system + "\" on this node");
    if (!request.contains("isolateName")) {
      pools.erase(system);
      return success(request, json::object());
    }
    auto isolate = request["isolateName"].get<std::string>();
    auto& list = pools[system];
    for (auto it = list.begin(); it != list.end(); ++it)
      if ((*it)["id"] == system + "/" + isolate) {
        list.erase(it);
        return success(request, json::object());
      }
    return failure(request, 404, "no pool \"" + system + "/" + isolate + "\" on this node");
  }
  if (action == "migrate") {
    auto system = request["isolateSystemName"].get<std::string>();
    auto isolate = request["isolateName"].get<std::string>();
    auto* pool = find_pool(pools, system, isolate);
    if (!pool) return failure(request, 404, "no pool \"" + system + "/" + isolate + "\" on this node");
    (*pool)["workersPaths"] = request["workersPaths"];
    (*pool)["workersCount"] = request["workersPaths"].size();
    return success(request, json::object());
  }
  return failure(request, 400, "unknown action \"" + action + "\"");
}

}  // namespace

struct fake_node::state {
  options opts;
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread;

  mutable std::mutex mutex;
  std::condition_variable changed;
  std::shared_ptr<net::ws_connection> conn;
  std::string id;
  bool register_failed = false;
  bool closed = false;
  std::vector<json> requests;
  std::vector<json> errors;
  json pools = json::object();

  void on_open(const std::shared_ptr<net::ws_connection>& c) {
    std::lock_guard lock(mutex);
    conn = c;
    changed.notify_all();
    if (opts.register_on_connect) {
      json reg = {{"type", "register"},
                  {"protocol", 1},
                  {"bootstrapperId", opts.previous_id ? json(*opts.previous_id) : json(nullptr)},
                  {"host", "127.0.0.1"},
                  {"port", opts.activator_port},
                  {"name", opts.name}};
      c->send(reg.dump(), false);
    }
  }

  void on_message(const std::shared_ptr<net::ws_connection>& c, const std::string& data) {
    auto frame = json::parse(data, nullptr, false);
    std::lock_guard lock(mutex);
    auto type = frame.is_object() ? frame.value("type", "") : "";
    if (type == "registered") {
      id = frame["bootstrapperId"].get<std::string>();
    } else if (type == "error") {
      errors.push_back(frame);
      if (id.empty()) register_failed = true;
    } else if (type == "request") {
      requests.push_back(frame);
      if (opts.fail_status && frame.value("action", "") != "describe")
        c->send(
            failure(frame, opts.fail_status, "refused by the test (" + std::to_string(opts.fail_status) + ")")
                .dump(),
            false);
      else if (opts.answer)
        c->send(answer(pools, frame).dump(), false);
    }
    changed.notify_all();
  }

  void on_close() {
    std::lock_guard lock(mutex);
    closed = true;
    changed.notify_all();
  }

  void on_fail(const std::string& why) {
    std::lock_guard lock(mutex);
    closed = true;
    errors.push_back({{"type", "connect-failed"}, {"error", why}});
    changed.notify_all();
  }

  template <class Pred>
  bool wait(std::chrono::milliseconds timeout, Pred pred) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, timeout, pred);
  }
};

namespace {

/// Passes the connection's events to the state. Holds it by plain pointer: the state owns the
/// io_context, whose destruction destroys this handler, and joins the io thread first.
class relay : public net::ws_handler {
 public:
  explicit relay(fake_node::state* s) : s_(s) {}
  void on_open(const std::shared_ptr<net::ws_connection>& c) override { s_->on_open(c); }
  void on_message(const std::shared_ptr<net::ws_connection>& c, std::string data, bool) override {
    s_->on_message(c, data);
  }
  void on_close(const std::shared_ptr<net::ws_connection>&, const std::string&) override { s_->on_close(); }

 private:
  fake_node::state* s_;
};

}  // namespace

fake_node::fake_node(std::uint16_t registry_port, options opts) : state_(std::make_shared<state>()) {
  state_->opts = std::move(opts);
  net::ws_url url{"127.0.0.1", registry_port, "/registry"};
  auto handler = std::make_shared<relay>(state_.get());
  std::weak_ptr<state> weak = state_;
  net::client_options co;
  co.headers = net::cluster_secret_headers(state_->opts.cluster_secret);
  net::ws_connect(
      state_->io, url, handler,
      [weak](const std::string& why) {
        if (auto s = weak.lock()) s->on_fail(why);
      },
      co);
  state_->thread = std::thread([s = state_.get()] { s->io.run(); });
}

fake_node::~fake_node() {
  disconnect();
  wait_closed(2s);
  state_->work.reset();
  state_->io.stop();
  state_->thread.join();
}

bool fake_node::wait_open(std::chrono::milliseconds timeout) {
  return state_->wait(timeout, [&] { return state_->conn != nullptr; });
}

bool fake_node::wait_registered(std::chrono::milliseconds timeout) {
  return state_->wait(timeout, [&] {
    return !state_->id.empty() || state_->register_failed || state_->closed;
  }) && !state_->id.empty();
}

std::string fake_node::id() const {
  std::lock_guard lock(state_->mutex);
  return state_->id;
}

std::vector<json> fake_node::requests() const {
  std::lock_guard lock(state_->mutex);
  return state_->requests;
}

bool fake_node::wait_requests(std::size_t n, std::chrono::milliseconds timeout) {
  return state_->wait(timeout, [&] { return state_->requests.size() >= n; });
}

std::vector<json> fake_node::errors() const {
  std::lock_guard lock(state_->mutex);
  return state_->errors;
}

bool fake_node::wait_closed(std::chrono::milliseconds timeout) {
  return state_->wait(timeout, [&] { return state_->closed; });
}

json fake_node::pools() const {
  std::lock_guard lock(state_->mutex);
  return state_->pools;
}

void fake_node::send_text(std::string text) {
  std::lock_guard lock(state_->mutex);
  if (state_->conn) state_->conn->send(std::move(text), false);
}

void fake_node::disconnect() {
  std::lock_guard lock(state_->mutex);
  if (state_->conn && !state_->closed) state_->conn->close("bye");
}

}  // namespace dde::registry::test
