#pragma once
// The System Bootstrapper (thesis 3.2.4): registers this node with the registry, keeps the link
// (re-registering with the same id after the registry restarts) and serves its requests.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "dde/core/net/retry_timer.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/node_frames.hpp"
#include "system_manager.hpp"

namespace dde::activator {

struct bootstrapper_options {
  std::string registry_url;  ///< ws://127.0.0.1:8000/registry, or a comma-separated list of them
  std::string name;          ///< this node's name
  std::string host;          ///< where this activator is reachable
  std::uint16_t port = 42042;
  bool tls = false;  ///< the activator listens with TLS: its URL is wss://
};

class bootstrapper : public net::ws_handler, public std::enable_shared_from_this<bootstrapper> {
 public:
  bootstrapper(boost::asio::io_context& io, std::shared_ptr<system_manager> systems,
               bootstrapper_options options);
  void start();
  void stop();
  /// The id the registry gave this node (empty until registered).
  std::string id() const;
  /// The id while registered with the registry, nullopt otherwise (thread-safe, for /health).
  std::optional<std::string> registration() const;

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

 private:
  void do_connect();
  void link_down(const std::string& why);
  void serve(const std::shared_ptr<net::ws_connection>& conn, protocol::request_frame request);

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<system_manager> systems_;
  bootstrapper_options options_;
  std::vector<net::ws_url> urls_;  ///< the --registry list
  std::size_t current_ = 0;        ///< the one tried or linked now
  std::shared_ptr<net::ws_connection> conn_;
  std::string id_;
  net::retry_timer retry_;
  bool stopped_ = false;
  mutable std::mutex registration_mutex_;
  std::optional<std::string> registration_;  ///< guarded by registration_mutex_
};

}  // namespace dde::activator
