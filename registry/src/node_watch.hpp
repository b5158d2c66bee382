#pragma once
// Node failure detection and failover. The registry pings every node each heartbeat and keeps a
// `describe` of it (of the pools a request changed after it ended, of the whole node when the version
// its ping answers moved); a node that answers nothing for the timeout (hung, or its connection
// gone without it registering again under its id) is lost: its connection is closed and every pool
// it ran with `failover: true` is deployed again on the surviving nodes, its workers spread over them.
// A pool that finds no node left (the survivors were lost too, or not back yet) waits, and goes to
// the first node connected at a later heartbeat: a node lost by mistake under load and back a moment
// later takes it. With a state store a waiting pool is remembered too (row "waiting:<lost node id>"),
// so a registry that restarts or takes over meanwhile places it. Nothing moves back by itself when
// the node returns (POST /registry/migrate does, when asked).
// Transport-free and single-threaded, like node_table: the service calls it on its strand.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "node_table.hpp"
#include "state_store.hpp"

namespace dde::registry {

class node_watch {
 public:
  using clock = node_table::clock;
  struct options {
    std::chrono::milliseconds heartbeat{1000};  ///< how often each node is pinged
    std::chrono::milliseconds timeout{3000};    ///< silent this long: the node is lost
    std::function<clock::time_point()> now = [] { return clock::now(); };
    /// Where the watched nodes and their pools are remembered across restarts (null: nowhere).
    state_store* store = nullptr;
    /// After a restart, how long a remembered node has to register again before it is lost.
    std::chrono::milliseconds restore_grace{15000};
    /// A node's pools are described again after any request that may have changed them, and when
    /// the version its ping answers changed (what it changed itself, e.g. autoscaling). A node whose
    /// ping says no version is described at this interval: a describe of every node at every
    /// heartbeat cost the nodes and the registry a core's tenth each at 1,000 pools, and one every
    /// 10 s still a core's 3 % with nothing running.
    std::chrono::milliseconds describe_every{10000};
  };

  node_watch(node_table& nodes, options opts);

  /// `pools` (a node's describe: system -> its pools, sorted by id) with the pools `scope` names as
  /// `answer` (a describe of that scope) shows them: replaced, added, or gone when it has none.
  static void merge_described(ordered_json& pools, const protocol::node::describe_scope& scope,
                              const ordered_json& answer);

  /// Watches the nodes the store remembers as gone since now: each is lost (and failed over) unless
  /// it registers again within the restore grace; the pools it remembers as waiting for a node wait
  /// again. Returns how many nodes; throws when the store cannot be read.
  std::size_t restore();
  /// Stops watching every node, failing none over (the registry stepped down: another leads now).
  void clear() {
    watched_.clear();
    unplaced_.clear();
  }
  /// One heartbeat: pings the nodes, refreshes what they run, finds lost ones and fails them over.
  void tick();
  /// `GET /registry/failover`: the watched nodes and the failovers so far.
  ordered_json status() const;

 private:
  struct watched {
    node_info info;
    clock::time_point last_heard;
    std::optional<clock::time_point> gone_since;  ///< its connection ended then
    std::chrono::milliseconds patience{0};        ///< how long it may stay gone (0: the timeout)
    ordered_json pools = ordered_json::object();  ///< its last describe
    ordered_json saved;                           ///< what the store holds of it
    bool pinging = false;
    bool describing = false;
    bool whole_due = true;             ///< its next describe covers every pool (new, back, or one failed)
    clock::time_point described_at{};  ///< of its last whole describe
    /// The version of what it runs, as its last ping answered (none: a node that does not say, which
    /// is described again every describe_every); and the one it had said when last described.
    std::optional<std::uint64_t> version, described_version;
    std::uint64_t epoch = 0;  ///< bumped when it comes back, so old answers are ignored
  };
  void heard(const std::string& id, std::uint64_t epoch);
  /// Pings and describes a connected node, unless an earlier ask of each is still out.
  void ask(const std::string& id, watched& w);
  /// Describes the whole node when due (see whole_due, version), else the pools requests changed.
  void describe(const std::string& id, watched& w);
  void lose(const std::string& id, const std::string& why);
  /// Remembers node `id`'s pools if they changed since the last save (errors are logged).
  void remember(const std::string& id, watched& w);
  /// Deploys the failover pools of lost node `lost` (`pools`: its describe) on the connected nodes;
  /// those that find none wait (and are remembered as waiting). Returns whether any waits.
  bool fail_over(const node_info& lost, const ordered_json& pools, const std::string& why);
  /// A failover pool of lost node `from`: its failover's number, its index in that record's pools,
  /// its isolate system and its entry in the node's describe.
  struct unplaced {
    std::uint64_t seq = 0;
    std::size_t index = 0;
    node_info from;
    std::string system;
    ordered_json entry;
  };
  /// Deploys `pool` on `survivors` (not empty), its workers spread; returns its entry in the record.
  ordered_json place(const unplaced& pool, const std::vector<node_info>& survivors);
  /// Deploys the pools that found no node on the nodes connected now, if any.
  void place_unplaced();
  /// Remembers the pools of lost node `lost` that wait for a node in the store's row "waiting:<id>"
  /// (forgets the row when none waits); errors are logged.
  void remember_waiting(const node_info& lost);
  /// The record of failover `seq` (null once pushed out of the list).
  ordered_json* record_of(std::uint64_t seq);

  node_table& nodes_;
  options opts_;
  std::map<std::string, watched> watched_;
  std::deque<ordered_json> failovers_;  ///< the latest, newest last
  std::size_t spread_ = 0;              ///< rotates the first target between pools
  std::uint64_t next_failover_ = 1;
  std::vector<unplaced> unplaced_;  ///< failover pools waiting for a node, oldest first
};

}  // namespace dde::registry
