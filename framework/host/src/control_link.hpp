#pragma once
// The host's link to its node's activator (activator/PROTOCOL.md, `/control`): says hello, answers
// addIsolate / removeIsolate / describe / shutdown, reconnects with backoff, and stops the process
// when no activator was reachable for `orphan_timeout`.

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "controller.hpp"
#include "dde/core/net/retry_timer.hpp"
#include "dde/net/ws.hpp"
#include "dde/protocol/control_frames.hpp"

namespace dde::host {

struct replier;

struct control_options {
  std::string url;  ///< ws://127.0.0.1:42042/control
  std::string system, instance, mqs;
  std::uint16_t ops_port = 0;  ///< where this system serves /metrics and /health (0: it does not)
  std::chrono::milliseconds orphan_timeout{120000};
  std::function<void(const std::string&)> request_stop;  ///< ends the process gracefully
};

class control_link : public net::ws_handler, public std::enable_shared_from_this<control_link> {
 public:
  control_link(boost::asio::io_context& io, std::shared_ptr<controller> ctrl, control_options options);
  void start();
  void stop();
  /// Sends `{"type": "event", ...event}` to the activator (dropped while it is unreachable).
  void send_event(nlohmann::json event);

  void on_open(const std::shared_ptr<net::ws_connection>& conn) override;
  void on_message(const std::shared_ptr<net::ws_connection>& conn, std::string data, bool binary) override;
  void on_close(const std::shared_ptr<net::ws_connection>& conn, const std::string& reason) override;

 private:
  void do_connect();
  void link_down(const std::string& why);
  // One handler per request of the /control protocol; each answers through `reply`.
  void handle(const replier& reply, protocol::control::add_isolate& r);
  void handle(const replier& reply, protocol::control::remove_isolate& r);
  void handle(const replier& reply, protocol::control::restart_isolate& r);
  void handle(const replier& reply, protocol::control::kill_isolate& r);
  void handle(const replier& reply, protocol::control::set_rate& r);
  void handle(const replier& reply, protocol::control::describe& r);
  void handle(const replier& reply, protocol::control::shutdown& r);
  void arm_orphan_timer();

  boost::asio::io_context& io_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  std::shared_ptr<controller> controller_;
  control_options options_;
  net::ws_url url_;
  std::shared_ptr<net::ws_connection> conn_;
  net::retry_timer retry_;
  boost::asio::steady_timer orphan_timer_;
  bool stopped_ = false;
};

}  // namespace dde::host
