#pragma once
// The Isolate Deployer (thesis 3.2.4): runs workers on this node for routers elsewhere. Each proxy
// connection to `/activator` hosts one worker (activator/PROTOCOL.md).

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>
#include <vector>

#include "dde/net/ws.hpp"

namespace dde::activator {

/// Handles `/activator`: one remote worker per connection.
/// Handles `/activator`: one remote worker per connection. Plugins outside `plugin_allow` (directories or
/// URL prefixes; empty: anywhere) are refused.
std::shared_ptr<net::ws_handler> make_isolate_deployer(boost::asio::io_context& io,
                                                       std::vector<std::string> plugin_allow = {});

}  // namespace dde::activator
