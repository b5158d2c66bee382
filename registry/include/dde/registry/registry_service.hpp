#pragma once
// The transport of the registry: one dde::net::server with the REST API and the /registry
// WebSocket, every event handed to the domain (node_endpoint, rest_api, node_table) on one strand,
// and a timer for request deadlines.

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <system_error>

#include "dde/registry/registry_config.hpp"

namespace dde::registry {

class registry_service {
 public:
  registry_service(boost::asio::io_context& io, registry_config cfg);
  ~registry_service();
  registry_service(const registry_service&) = delete;
  registry_service& operator=(const registry_service&) = delete;

  /// Binds and starts serving.
  std::error_code start();
  /// The bound port (after `start`).
  std::uint16_t port() const;
  /// Stops accepting and closes the node connections; their pending requests fail.
  void stop();

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace dde::registry
