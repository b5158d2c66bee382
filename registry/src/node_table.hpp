#pragma once
// The domain of the registry: the connected nodes (bootstrappers), their ids, and the requests in
// flight to them. No sockets: a node is reached through a `node_link`, time comes from a clock
// function, so tests drive it directly. Not thread-safe: the service calls it from one strand.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "dde/protocol/node_frames.hpp"

namespace dde::registry {

using protocol::ordered_json;
using protocol::response_frame;

/// The way to one node: its WebSocket, or a fake in tests.
class node_link {
 public:
  virtual ~node_link() = default;
  /// Queues a text frame.
  virtual void send(std::string text) = 0;
  /// Ends the connection, telling the node `reason`.
  virtual void close(std::string reason) = 0;
};

/// A connected node, as `GET /registry/system/list` shows it.
struct node_info {
  std::string id;         ///< bootstrapperId
  std::string ip;         ///< the node's address as the registry sees its connection
  std::string port;       ///< the port of that connection, as text (thesis 3.2.2)
  std::string name;       ///< from the register frame
  std::string activator;  ///< ws://host:port/activator
  std::chrono::system_clock::time_point connected_at;
};

/// The thesis's list entry (bootstrapperId, ip, port) and DDE's additions, in that order.
ordered_json to_json(const node_info& node);

/// How a request to a node ended: its result, or its error with the HTTP status as the code (the
/// node's own, 504 for a timeout, 502 for a disconnect; http_status() reads it).
using node_answer = result<ordered_json>;

/// What of a node's pools a describe taken earlier may no longer show: all of them, or the pools
/// (per isolate system; no name: all of that system's) that requests since have changed.
struct stale_pools {
  bool whole = false;
  protocol::node::describe_scope pools;
  bool empty() const { return !whole && pools.empty(); }
  void add(const stale_pools& other);
};
/// The pools `request` may change: those it names (a deploy's body names one), all of a system it
/// shuts down, nothing for a describe or a ping, every pool when it names none.
stale_pools touched_by(const protocol::node_request& request);

class node_table {
 public:
  using clock = std::chrono::steady_clock;
  using answer_fn = std::function<void(node_answer)>;

  struct options {
    std::chrono::milliseconds request_timeout{15000};
    std::function<clock::time_point()> now = [] { return clock::now(); };
    std::uint64_t seed = std::random_device{}();  ///< of the random ids
  };

  explicit node_table(options opts);

  /// Registers the node on connection `conn`; returns its bootstrapperId (`wanted` when that is free).
  std::string add(std::uint64_t conn, std::shared_ptr<node_link> link, node_info info,
                  const std::optional<std::string>& wanted);
  /// Forgets the node on `conn` (if it registered) and fails its pending requests with 502
  /// "node N disconnected"; returns its id, and how many requests failed in `failed`.
  std::optional<std::string> remove(std::uint64_t conn, std::size_t* failed = nullptr);

  /// Closes node `id`'s connection (telling it `reason`) and forgets it at once, as `remove` does.
  void disconnect(const std::string& id, const std::string& reason);

  std::optional<std::string> id_of(std::uint64_t conn) const;
  /// The id of the node `key` names: its bootstrapperId, or the name of exactly one connected node
  /// (`ddectl show node-a`); "" when none, or several nodes share that name.
  std::string resolve(const std::string& key) const;
  /// The node `key` names (an id or a unique name, see resolve).
  const node_info* find(const std::string& key) const;
  /// Every node, oldest connection first.
  std::vector<node_info> list() const;
  std::size_t size() const { return nodes_.size(); }

  /// Sends `request` to node `id` (or a unique name, see resolve). `done` runs exactly once (later, never
  /// inside this call): with the node's answer, 504 after the request timeout, or 502 if the node
  /// disconnects. Returns false, and drops `done`, when no node has that id.
  bool request(const std::string& id, protocol::node_request request, answer_fn done);
  /// Matches a response frame from connection `conn` to its request; an error text for a
  /// response nobody waits for (unknown id, already timed out, or from another node).
  std::optional<std::string> on_response(std::uint64_t conn, response_frame response);
  /// Fails every request whose deadline has passed with 504; returns how many.
  std::size_t expire();
  /// The earliest deadline of the pending requests.
  std::optional<clock::time_point> next_deadline() const;
  /// The pools of node `id` that requests ended since the last call (answered or not) may have
  /// changed, and forgets them: a describe taken before may show them as they were. An answer that
  /// came after its request had timed out makes every pool stale.
  stale_pools take_stale(const std::string& id);
  /// Marks `pools` of node `id` stale again (a describe of them failed).
  void mark_stale(const std::string& id, const stale_pools& pools);
  std::size_t pending() const { return pending_.size(); }

 private:
  struct node {
    node_info info;
    std::uint64_t conn = 0;
    std::uint64_t seq = 0;  ///< registration order
    std::shared_ptr<node_link> link;
    stale_pools stale;  ///< see take_stale()
  };
  struct pending_request {
    std::string node_id;
    std::uint64_t conn = 0;
    std::string action;
    stale_pools touches;  ///< what it may change
    clock::time_point deadline;
    answer_fn done;
  };

  std::string fresh_id();
  /// A request to `p.node_id` ended: what it may have changed is stale.
  void ended(const pending_request& p);
  void fail(std::vector<std::pair<answer_fn, node_answer>> failures);

  options opts_;
  std::mt19937_64 random_;
  std::map<std::string, node> nodes_;                 // by id
  std::map<std::uint64_t, std::string> by_conn_;      // conn -> id
  std::map<std::uint64_t, pending_request> pending_;  // by request id
  std::uint64_t next_request_ = 1;
  std::uint64_t next_seq_ = 1;
};

}  // namespace dde::registry
