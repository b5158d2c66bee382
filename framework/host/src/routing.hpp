#pragma once
// The router's bookkeeping as plain logic: which workers get a message and how many credits the
// pool may ask the MQS for. No threads, no I/O: unit-tested directly.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dde/message.hpp"
#include "dde/protocol/pool_spec.hpp"
#include "dde/router.hpp"

namespace dde::host {

class pool_ledger {
 public:
  pool_ledger(router_kind kind, std::size_t credits_per_worker, std::uint32_t seed = std::random_device{}());

  /// Adds a worker slot (alive) and returns its index.
  std::size_t add_worker(std::string id, std::string path);
  /// Marks a worker dead (its messages no longer count) or alive again with a new id.
  void set_alive(std::size_t index, bool alive, std::string id = {});
  std::size_t size() const { return slots_.size(); }
  /// Workers that take messages (alive and open): the broker consumers the pool stands for.
  std::uint32_t consumers() const;
  bool alive(std::size_t index) const { return slots_[index].alive; }
  /// Closes (or reopens) a slot: a closed worker keeps what it holds, but is given nothing more and
  /// adds no room (KILL lets a worker finish its queue this way).
  void set_open(std::size_t index, bool open) { slots_.at(index).open = open; }
  bool open(std::size_t index) const { return slots_[index].open; }
  std::size_t in_flight(std::size_t index) const { return slots_[index].in_flight; }
  /// The most messages worker `index` has held at once since its instance started (for sizing
  /// `credits`, and to check a smallest-mailbox choice afterwards).
  std::size_t peak_in_flight(std::size_t index) const { return slots_[index].peak_in_flight; }
  std::size_t total_in_flight() const;
  /// Index of the alive worker with this id, or npos.
  std::size_t find(const std::string& id) const;
  static constexpr std::size_t npos = std::size_t(-1);

  /// Room for more messages in the pool (broadcast: the least room of any worker).
  std::size_t room() const;
  /// Credits to ask the MQS for now (0 while what is asked and unused still covers all but less than
  /// half the window); counts them as requested.
  std::size_t take_credit_request();
  /// Credits asked for and not yet used by a delivery.
  std::size_t requested() const { return requested_; }
  /// A delivery arrived (uses one requested credit).
  void on_delivery();
  /// The connection to the MQS was replaced: credits asked of the old one are void.
  void reset_requested() { requested_ = 0; }
  /// Messages the router holds without a worker (e.g. waiting for a full sub-pool): they use room.
  void set_held(std::size_t held) { held_ = held; }
  /// Stops (or resumes) asking for credits, e.g. while the pool restarts.
  void set_paused(bool paused) { paused_ = paused; }

  /// Picks the workers for the next message by the built-in policy; empty when none has room (for
  /// consistent-hash: when the worker that owns `hash_key` has none; the message waits for it).
  std::vector<std::size_t> select(std::string_view hash_key = {});
  /// Tail-chopping: the next worker with room (in turn) that is not in `asked`, or npos.
  std::size_t select_other(const std::vector<std::size_t>& asked);
  /// Consistent-hash: the slot that owns `key` on the ring of slots that take messages (npos when none does).
  std::size_t owner_of(std::string_view key) const;
  /// Applies a custom policy's choice: keeps valid alive indices with room; falls back to `select`.
  std::vector<std::size_t> select_custom(const std::vector<std::size_t>& chosen);
  /// A message was handed to worker `index` / the worker finished one.
  void assign(std::size_t index);
  void finish(std::size_t index);

  /// What a custom router sees.
  std::vector<worker_info> snapshot() const;

 private:
  struct slot {
    std::string id;
    std::string path;
    std::size_t in_flight = 0;
    bool alive = true;
    bool open = true;
    /// smallest-mailbox: when the message it is handling now started (roughly: when it got one while
    /// idle, or finished one with more waiting).
    std::chrono::steady_clock::time_point busy_since{};
    std::size_t peak_in_flight = 0;
  };
  bool takes_messages(const slot& s) const { return s.alive && s.open; }
  bool has_room(const slot& s) const { return takes_messages(s) && s.in_flight < credits_; }
  /// The smallest-mailbox router's choice, npos when no worker has room.
  std::size_t smallest_mailbox() const;
  /// The least credit worth a pull while some asked earlier is unused: half the pool's window.
  std::size_t refill_chunk() const;

  router_kind kind_;
  std::size_t credits_;
  std::vector<slot> slots_;
  std::size_t next_ = 0;
  std::size_t requested_ = 0;
  std::size_t held_ = 0;
  /// Consistent-hash ring: `virtual_nodes` points per slot, by slot index (not instance id), so a
  /// restarted worker keeps its keys and an added one takes about 1/N of them.
  std::vector<std::pair<std::uint64_t, std::size_t>> ring_;
  static constexpr int virtual_nodes = 128;
  bool paused_ = false;
  std::mt19937 rng_;
};

/// Per-key sub-pools (the seed's poolSelector): how many messages of each key are in flight, and
/// whether one more of a key may start.
class sub_pool_ledger {
 public:
  explicit sub_pool_ledger(sub_pool_spec spec) : spec_(std::move(spec)) {}
  bool enabled() const { return !spec_.key.empty(); }
  /// The sub-pool of a message: its body's `key` field (a string as it is, a number or bool as JSON),
  /// "" when the body has none.
  std::string key_of(const message& m) const;
  std::size_t capacity(const std::string& key) const;  ///< 0: no limit
  bool has_room(const std::string& key) const;
  void start(const std::string& key) { ++in_flight_[key]; }
  void finish(const std::string& key);
  std::size_t in_flight(const std::string& key) const;
  const sub_pool_spec& spec() const { return spec_; }

 private:
  sub_pool_spec spec_;
  std::map<std::string, std::size_t> in_flight_;
};

}  // namespace dde::host
