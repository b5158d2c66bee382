#pragma once
// The node side of the registry: reads the frames of each bootstrapper connection (register,
// responses, events) and keeps the node_table in step. Transport-free: the service feeds it the
// WebSocket events, tests feed it directly.

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "node_table.hpp"

namespace dde::registry {

class node_endpoint {
 public:
  explicit node_endpoint(node_table& nodes);

  /// A connection opened from `remote` ("ip:port"); it must register before anything else.
  void on_open(std::uint64_t conn, const std::string& remote, std::shared_ptr<node_link> link);
  /// A text frame from `conn`.
  void on_text(std::uint64_t conn, const std::string& text);
  /// A binary frame: the protocol has none.
  void on_binary(std::uint64_t conn);
  /// The connection ended; a registered node leaves the table and its requests fail.
  void on_close(std::uint64_t conn, const std::string& reason);
  /// Closes every connection (the registry is stopping).
  void close_all(const std::string& reason);

 private:
  struct connection {
    std::string remote;
    std::shared_ptr<node_link> link;
  };
  void on_register(std::uint64_t conn, connection& c, const ordered_json& frame);
  void on_frame(std::uint64_t conn, connection& c, const std::string& id, const ordered_json& frame);

  node_table& nodes_;
  std::map<std::uint64_t, connection> connections_;
};

}  // namespace dde::registry
