#pragma once
// A fake bootstrapper for the registry's integration tests: a WebSocket client (over
// dde::net::ws_connect, i.e. Beast) that registers at ws://127.0.0.1:PORT/registry and answers
// describe/deploy/shutdown/migrate like a real node, keeping a map of its pools. It can also stay
// silent (to provoke timeouts) or send raw frames. Thread-safe; await with the wait_* calls.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace dde::registry::test {

using namespace std::chrono_literals;

class fake_node {
 public:
  struct options {
    std::string name = "fake-node";
    std::optional<std::string> previous_id;  ///< sent as bootstrapperId in the register frame
    std::uint16_t activator_port = 42042;
    bool answer = true;               ///< false: requests are recorded and never answered
    int fail_status = 0;              ///< not 0: every request but describe fails with this status
    bool register_on_connect = true;  ///< false: the test sends its own first frame
    std::string cluster_secret;       ///< sent on the handshake when not empty
  };

  fake_node(std::uint16_t registry_port, options opts);
  ~fake_node();
  fake_node(const fake_node&) = delete;
  fake_node& operator=(const fake_node&) = delete;

  /// Waits until the WebSocket is open (send_text works from then on).
  bool wait_open(std::chrono::milliseconds timeout = 10s);
  /// Waits for the registry's "registered" frame; false on timeout or error.
  bool wait_registered(std::chrono::milliseconds timeout = 10s);
  /// The bootstrapperId the registry gave (empty before registration).
  std::string id() const;
  /// Requests received so far (frames of type "request"), oldest first.
  std::vector<nlohmann::ordered_json> requests() const;
  bool wait_requests(std::size_t n, std::chrono::milliseconds timeout = 10s);
  /// Error frames received.
  std::vector<nlohmann::ordered_json> errors() const;
  /// True once the connection ended (or never opened).
  bool wait_closed(std::chrono::milliseconds timeout = 10s);
  /// The pools this node runs: the body of its describe answer.
  nlohmann::ordered_json pools() const;

  void send_text(std::string text);
  /// Closes the WebSocket politely.
  void disconnect();

  struct state;  ///< private to the implementation

 private:
  std::shared_ptr<state> state_;
};

}  // namespace dde::registry::test
