#include "isolate_deployer.hpp"

#include <map>
#include <mutex>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/metrics.hpp"
#include "host/plugin_allow.hpp"
#include "host/worker_cell.hpp"

namespace dde::activator {
namespace {

std::shared_ptr<spdlog::logger> log() { return logger("activator.deployer"); }

/// One remote worker: the cell runs here, everything it sends goes back over the proxy's link.
class remote_worker : public host::cell_owner, public std::enable_shared_from_this<remote_worker> {
 public:
  remote_worker(boost::asio::io_context& io, std::shared_ptr<net::ws_connection> conn) : io_(io), conn_(std::move(conn)) {}

  std::string spawn(const nlohmann::json& frame, const std::vector<std::string>& plugin_allow) {
    if (frame.value("protocol", 0) != 1) return "unsupported protocol version " + frame.value("protocol", nlohmann::json()).dump();
    auto spec = host::parse_pool_spec(frame.value("spec", nlohmann::json()));
    if (!spec) return "bad spec: " + spec.error();
    instance_ = frame.value("instance", std::string());
    if (!valid_name(instance_)) return "bad instance id";
    if (auto refused = host::check_plugin_allowed(spec.value().uri, plugin_allow); !refused.empty())
      return refused;
    auto plugin = host::worker_plugin::load(spec.value().plugin_path(), spec.value().sha256);
    if (!plugin) return plugin.error();
    spec_ = std::make_shared<const host::pool_spec>(spec.value());
    cell_ = std::make_shared<host::worker_cell>(io_, weak_from_this(), spec_, plugin.value(),
                                                frame.value("index", std::size_t(0)));
    auto made = cell_->create();
    if (!made) {
      cell_.reset();
      return made.error();
    }
    cell_->start();
    log()->info("spawned a worker of {} ({}) for instance {}", spec_->addr().str(), spec_->uri, instance_);
    return {};
  }

  void handle(const nlohmann::json& frame) {
    if (!cell_) return;
    auto type = frame.value("type", std::string());
    if (type == "message") {
      auto e = decode_envelope(frame.value("envelope", std::string()));
      cell_->post_message(to_message(std::move(e), frame.value("redelivered", false)),
                          frame.value("delivery", std::uint64_t(0)));
    } else if (type == "reply") {
      cell_->post_reply(to_message(decode_envelope(frame.value("envelope", std::string())), false));
    } else if (type == "supervise") {
      auto d = frame.value("directive", std::string());
      auto delay = std::chrono::milliseconds(frame.value("delayMs", 0));
      if (d == "resume") cell_->supervise(host::directive::resume, delay);
      if (d == "restart") cell_->supervise(host::directive::restart, delay);
      if (d == "stop") cell_->supervise(host::directive::stop, delay);
    }
  }

  void kill() {
    if (cell_) cell_->kill([] {});
    cell_.reset();
  }

  std::string worker_id() const { return cell_ ? cell_->id() : std::string(); }

  // cell_owner: everything goes back to the proxy.
  void worker_done(std::size_t, std::uint64_t delivery_id) override {
    send({{"type", "done"}, {"delivery", delivery_id}});
  }
  void worker_failed(std::size_t, std::uint64_t delivery_id, std::string what, std::string new_id) override {
    send({{"type", "failed"}, {"delivery", delivery_id}, {"error", what}, {"workerId", new_id}});
  }
  void worker_rate_limited(std::size_t, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                           std::string reason, message m) override {
    send({{"type", "rateLimited"}, {"delivery", delivery_id}, {"delayMs", delay.count()}, {"reason", reason},
          {"envelope", encode_envelope(to_envelope(m))}, {"redelivered", m.redelivered()}});
  }
  void worker_up(std::size_t, std::string id) override { send({{"type", "up"}, {"workerId", id}}); }
  void worker_crashed(std::size_t, std::uint64_t delivery_id, std::string what) override {
    // The pool's router, on the other node, decides what happens next.
    send({{"type", "crashed"}, {"delivery", delivery_id}, {"error", what}});
  }
  void enqueue(std::string topic, delivery_mode mode, const envelope& e) override {
    send({{"type", "enqueue"}, {"topic", topic}, {"mode", std::string(to_string(mode))}, {"envelope", encode_envelope(e)}});
  }
  void when_writable(std::function<void()> fn) override { fn(); }
  const std::string& instance() const override { return instance_; }

 private:
  void send(const nlohmann::json& frame) { conn_->send(frame.dump(), false); }

  boost::asio::io_context& io_;
  std::shared_ptr<net::ws_connection> conn_;
  std::shared_ptr<const host::pool_spec> spec_;
  std::shared_ptr<host::worker_cell> cell_;
  std::string instance_;
};

class deployer : public net::ws_handler {
  static metric_cell& clients() {
    return metrics_registry::process().gauge("dde_activator_websocket_clients",
                                             "Open WebSocket connections, by endpoint.", {{"endpoint", "activator"}});
  }

 public:
  deployer(boost::asio::io_context& io, std::vector<std::string> plugin_allow)
      : io_(io), plugin_allow_(std::move(plugin_allow)) {}

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    clients().add(1);
    log()->debug("proxy connected from {}", conn->remote());
  }

  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) override {
    auto frame = nlohmann::json::parse(data, nullptr, false);
    if (frame.is_discarded() || !frame.is_object()) {
      conn->send(nlohmann::json{{"type", "error"}, {"error", "frame is not a JSON object"}}.dump(), false);
      return;
    }
    std::shared_ptr<remote_worker> worker;
    {
      std::lock_guard lock(mutex_);
      auto it = workers_.find(conn->id());
      if (it != workers_.end()) worker = it->second;
    }
    if (frame.value("type", std::string()) == "spawn") {
      if (worker) {
        conn->send(nlohmann::json{{"type", "error"}, {"error", "this link already has a worker"}}.dump(), false);
        return;
      }
      worker = std::make_shared<remote_worker>(io_, conn);
      auto error = worker->spawn(frame, plugin_allow_);
      if (!error.empty()) {
        log()->warn("refused a remote worker for {}: {}", conn->remote(), error);
        conn->send(nlohmann::json{{"type", "error"}, {"error", error}}.dump(), false);
        conn->close("spawn refused");
        return;
      }
      {
        std::lock_guard lock(mutex_);
        workers_[conn->id()] = worker;
      }
      conn->send(nlohmann::json{{"type", "spawned"}, {"workerId", worker->worker_id()}}.dump(), false);
      return;
    }
    if (!worker) {
      conn->send(nlohmann::json{{"type", "error"}, {"error", "send spawn first"}}.dump(), false);
      return;
    }
    worker->handle(frame);
  }

  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override {
    clients().add(-1);
    std::shared_ptr<remote_worker> worker;
    {
      std::lock_guard lock(mutex_);
      auto it = workers_.find(conn->id());
      if (it == workers_.end()) return;
      worker = it->second;
      workers_.erase(it);
    }
    log()->info("proxy link from {} closed ({}): stopping its worker", conn->remote(), reason);
    worker->kill();
  }

 private:
  boost::asio::io_context& io_;
  std::vector<std::string> plugin_allow_;
  std::mutex mutex_;  // connections call in on their own strands
  std::map<std::uint64_t, std::shared_ptr<remote_worker>> workers_;
};

}  // namespace

std::shared_ptr<net::ws_handler> make_isolate_deployer(boost::asio::io_context& io,
                                                       std::vector<std::string> plugin_allow) {
  return std::make_shared<deployer>(io, std::move(plugin_allow));
}

}  // namespace dde::activator
