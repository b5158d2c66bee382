#include "isolate_deployer.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <map>
#include <mutex>

#include "dde/core/metrics.hpp"
#include "dde/envelope.hpp"
#include "dde/log.hpp"
#include "dde/protocol/deployer_frames.hpp"
#include "dde/runtime/plugin_allow.hpp"
#include "dde/runtime/worker_cell.hpp"

namespace dde::activator {
namespace {

std::shared_ptr<spdlog::logger> log() { return logger("activator.deployer"); }

/// One remote worker: the cell runs here, everything it sends goes back over the proxy's link.
class remote_worker : public runtime::cell_owner, public std::enable_shared_from_this<remote_worker> {
 public:
  remote_worker(boost::asio::io_context& io, std::shared_ptr<net::ws_connection> conn)
      : io_(io), conn_(std::move(conn)) {}

  std::string spawn(const protocol::proxy::spawn& frame, const std::vector<std::string>& plugin_allow) {
    auto spec = dde::parse_pool_spec(frame.spec);
    if (!spec) return "bad spec: " + spec.error();
    instance_ = frame.instance;
    if (!valid_name(instance_)) return "bad instance id";
    if (auto refused = runtime::check_plugin_allowed(spec.value().uri, plugin_allow); !refused.empty())
      return refused;
    auto plugin = runtime::worker_plugin::load(spec.value().plugin_path(), spec.value().sha256);
    if (!plugin) return plugin.error();
    spec_ = std::make_shared<const dde::pool_spec>(spec.value());
    cell_ = std::make_shared<runtime::worker_cell>(io_, weak_from_this(), spec_, plugin.value(), frame.index);
    auto made = cell_->create();
    if (!made) {
      cell_.reset();
      return made.error();
    }
    cell_->start();
    log()->info("spawned a worker of {} ({}) for instance {}", spec_->addr().str(), spec_->uri, instance_);
    return {};
  }

  void handle(protocol::proxy::message& f) {
    if (cell_) cell_->post_message(to_message(std::move(f.env), f.redelivered), f.delivery);
  }
  void handle(protocol::proxy::reply& f) {
    if (cell_) cell_->post_reply(to_message(std::move(f.env), false));
  }
  void handle(protocol::proxy::supervise& f) {
    if (!cell_) return;
    auto d = f.what == protocol::proxy::directive::resume    ? runtime::directive::resume
             : f.what == protocol::proxy::directive::restart ? runtime::directive::restart
                                                             : runtime::directive::stop;
    cell_->supervise(d, f.delay);
  }
  void handle(protocol::proxy::spawn&) {}  // the deployer answers a second spawn itself

  void kill() {
    if (cell_) cell_->kill([] {});
    cell_.reset();
  }

  std::string worker_id() const { return cell_ ? cell_->id() : std::string(); }

  // cell_owner: everything goes back to the proxy.
  void worker_done(std::size_t, std::uint64_t delivery_id) override {
    send(protocol::deployer::done{delivery_id});
  }
  void worker_failed(std::size_t, std::uint64_t delivery_id, std::string what, std::string new_id) override {
    send(protocol::deployer::failed{delivery_id, std::move(what), std::move(new_id)});
  }
  void worker_rate_limited(std::size_t, std::uint64_t delivery_id, std::chrono::milliseconds delay,
                           std::string reason, message m) override {
    send(protocol::deployer::rate_limited{delivery_id, delay, std::move(reason), to_envelope(m),
                                          m.redelivered()});
  }
  void worker_up(std::size_t, std::string id) override { send(protocol::deployer::up{std::move(id)}); }
  void worker_crashed(std::size_t, std::uint64_t delivery_id, std::string what) override {
    // The pool's router, on the other node, decides what happens next.
    send(protocol::deployer::crashed{delivery_id, std::move(what)});
  }
  void enqueue(std::string topic, delivery_mode mode, const envelope& e) override {
    send(protocol::deployer::enqueue{std::move(topic), mode, e});
  }
  void when_writable(std::function<void()> fn) override { fn(); }
  const std::string& instance() const override { return instance_; }

 private:
  void send(protocol::deployer_frame frame) { conn_->send(protocol::encode(frame), false); }

  boost::asio::io_context& io_;
  std::shared_ptr<net::ws_connection> conn_;
  std::shared_ptr<const dde::pool_spec> spec_;
  std::shared_ptr<runtime::worker_cell> cell_;
  std::string instance_;
};

class deployer : public net::ws_handler {
  static metric_cell& clients() {
    return metrics_registry::process().gauge("dde_activator_websocket_clients",
                                             "Open WebSocket connections, by endpoint.",
                                             {{"endpoint", "activator"}});
  }

 public:
  deployer(boost::asio::io_context& io, std::vector<std::string> plugin_allow)
      : io_(io), plugin_allow_(std::move(plugin_allow)) {}

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override {
    clients().add(1);
    log()->debug("proxy connected from {}", conn->remote());
  }

  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool) override {
    auto frame = protocol::parse_proxy_frame(data);
    if (!frame) {
      conn->send(protocol::encode(protocol::deployer::error{frame.error()}), false);
      return;
    }
    std::shared_ptr<remote_worker> worker;
    {
      std::lock_guard lock(mutex_);
      auto it = workers_.find(conn->id());
      if (it != workers_.end()) worker = it->second;
    }
    if (auto* spawn = std::get_if<protocol::proxy::spawn>(&frame.value())) {
      if (worker) {
        conn->send(protocol::encode(protocol::deployer::error{"this link already has a worker"}), false);
        return;
      }
      worker = std::make_shared<remote_worker>(io_, conn);
      auto error = worker->spawn(*spawn, plugin_allow_);
      if (!error.empty()) {
        log()->warn("refused a remote worker for {}: {}", conn->remote(), error);
        conn->send(protocol::encode(protocol::deployer::error{error}), false);
        conn->close("spawn refused");
        return;
      }
      {
        std::lock_guard lock(mutex_);
        workers_[conn->id()] = worker;
      }
      conn->send(protocol::encode(protocol::deployer::spawned{worker->worker_id()}), false);
      return;
    }
    if (!worker) {
      conn->send(protocol::encode(protocol::deployer::error{"send spawn first"}), false);
      return;
    }
    std::visit([&](auto& f) { worker->handle(f); }, frame.value());
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
