#pragma once
// A proxy worker (thesis 3.2.1 "Proxy"): stands in the router for a worker that runs on another
// node. It asks that node's Isolate Deployer to spawn the worker and forwards messages both ways
// (activator/PROTOCOL.md, `/activator`). A dropped link fails its unfinished messages back to the
// broker and respawns the worker with backoff.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <set>
#include <string>

#include "dde/core/net/retry_timer.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/deployer_frames.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "runtime.hpp"

namespace dde::host {

class proxy_cell : public cell, public net::ws_handler, public std::enable_shared_from_this<proxy_cell> {
 public:
  proxy_cell(boost::asio::io_context& io, std::weak_ptr<cell_owner> owner,
             std::shared_ptr<const pool_spec> spec, std::string url, std::size_t index);

  result<bool> create() override;
  void start() override;
  void post_message(message&& m, std::uint64_t delivery_id) override;
  void post_reply(message m) override;
  void kill(std::function<void()> done) override;
  std::string id() const override { return id_; }
  void supervise(directive d, std::chrono::milliseconds delay) override;
  /// A remote worker is watched by its own node's link: a proxy answers for its link.
  void ping(std::function<void(bool, std::chrono::milliseconds)> pong) override;
  void fail_current(std::string) override {}

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

 private:
  void do_connect();
  void link_down(const std::string& why);
  // One handler per frame the Isolate Deployer sends (activator/PROTOCOL.md).
  void handle(cell_owner& owner, protocol::deployer::spawned& f);
  void handle(cell_owner& owner, protocol::deployer::error& f);
  void handle(cell_owner& owner, protocol::deployer::done& f);
  void handle(cell_owner& owner, protocol::deployer::failed& f);
  void handle(cell_owner& owner, protocol::deployer::rate_limited& f);
  void handle(cell_owner& owner, protocol::deployer::up& f);
  void handle(cell_owner& owner, protocol::deployer::crashed& f);
  void handle(cell_owner& owner, protocol::deployer::enqueue& f);

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::weak_ptr<cell_owner> owner_;
  std::shared_ptr<const pool_spec> spec_;
  std::string url_text_;
  net::ws_url url_;
  std::size_t index_;
  std::string id_;
  std::shared_ptr<net::ws_connection> conn_;
  bool spawned_ = false;
  bool killed_ = false;
  bool reported_down_ = false;
  std::set<std::uint64_t> in_flight_;
  net::retry_timer retry_;
};

}  // namespace dde::host
