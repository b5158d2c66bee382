#pragma once
// The Isolate Deployer (thesis 3.2.4): runs workers on this node for routers elsewhere. Each proxy
// connection to `/activator` hosts one worker (activator/PROTOCOL.md).

#include <memory>

#include <boost/asio/io_context.hpp>

#include "dde/net/ws.hpp"

namespace dde::activator {

/// Handles `/activator`: one remote worker per connection.
std::shared_ptr<net::ws_handler> make_isolate_deployer(boost::asio::io_context& io);

}  // namespace dde::activator
