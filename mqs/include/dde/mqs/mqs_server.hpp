#pragma once
/// \file
/// The whole MQS in one object: the WebSocket server at `/mqs`, the enqueuer and the dequeuers.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <system_error>

#include "dde/mqs/config.hpp"

namespace dde::mqs {

class mqs_server {
 public:
  mqs_server(boost::asio::io_context& io, const config& cfg);
  ~mqs_server();
  /// Starts the broker threads and binds the WebSocket server.
  std::error_code start();
  /// The bound port.
  std::uint16_t port() const;
  /// Stops accepting (safe on an Asio thread).
  void stop_accepting();
  /// Stops everything; joins the broker threads, so call it outside the Asio threads.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace dde::mqs
