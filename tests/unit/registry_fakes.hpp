#pragma once
// Fakes for the registry's unit tests: a node_link that records frames, a clock tests move by hand,
// and a scripted node that answers the requests it received when told to.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "node_table.hpp"

namespace dde::registry::test {

using json = nlohmann::ordered_json;

/// Records every frame sent to a node.
class recording_link : public node_link {
 public:
  void send(std::string text) override { frames.push_back(json::parse(text)); }
  void close(std::string reason) override {
    closed = true;
    close_reason = std::move(reason);
  }
  /// The frames of type "request".
  std::vector<json> requests() const {
    std::vector<json> out;
    for (auto& f : frames)
      if (f.value("type", "") == "request") out.push_back(f);
    return out;
  }
  std::vector<json> frames;
  bool closed = false;
  std::string close_reason;
};

/// A steady clock that only moves when told to.
struct manual_clock {
  node_table::clock::time_point now{std::chrono::hours(1)};
  std::function<node_table::clock::time_point()> fn() {
    return [this] { return now; };
  }
};

/// A node table on `clock`, its random ids from a fixed seed.
inline node_table::options table_options(manual_clock& clock) {
  node_table::options o;
  o.now = clock.fn();
  o.seed = 7;
  return o;
}

/// A node registered in a table, whose answers the test gives.
struct scripted_node {
  scripted_node(node_table& table, std::uint64_t conn, const std::string& wanted_id = {},
                const std::string& name = {})
      : table(table), conn(conn) {
    node_info info;
    info.ip = "127.0.0.1";
    info.port = std::to_string(50000 + conn);
    info.name = name.empty() ? "node-" + std::to_string(conn) : name;
    info.activator = "ws://127.0.0.1:" + std::to_string(42000 + conn) + "/activator";
    id =
        table.add(conn, link, info, wanted_id.empty() ? std::nullopt : std::optional<std::string>(wanted_id));
  }
  /// The last request received.
  json last() const { return link->requests().back(); }
  /// Answers request `request_id` with success.
  void ok(std::uint64_t request_id, json result) {
    response_frame r;
    r.id = request_id;
    r.ok = true;
    r.result = std::move(result);
    table.on_response(conn, std::move(r));
  }
  /// Answers request `request_id` with an error.
  void fail(std::uint64_t request_id, int status, std::string error) {
    response_frame r;
    r.id = request_id;
    r.status = status;
    r.error = std::move(error);
    table.on_response(conn, std::move(r));
  }
  node_table& table;
  std::uint64_t conn;
  std::shared_ptr<recording_link> link = std::make_shared<recording_link>();
  std::string id;
};

}  // namespace dde::registry::test
