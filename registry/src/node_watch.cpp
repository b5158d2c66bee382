#include "node_watch.hpp"

#include <algorithm>
#include <memory>
#include <string_view>

#include "dde/log.hpp"
#include "pool_mover.hpp"

namespace dde::registry {
namespace {

constexpr std::size_t failovers_kept = 50;
constexpr const char* no_node_left = "no node left to run it: it goes to the next node that registers";
/// The store's row of a lost node's pools waiting for a node is "waiting:<its id>".
constexpr std::string_view waiting_row = "waiting:";

/// A failover pool's entry in its record, before it is placed: `{pool, workers, to: []}`.
ordered_json moved_entry(const ordered_json& entry) {
  std::size_t workers = std::max<std::size_t>(1, entry.value("workersCount", std::size_t(1)));
  return {{"pool", entry.value("id", std::string())}, {"workers", workers}, {"to", ordered_json::array()}};
}

long long epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

node_watch::node_watch(node_table& nodes, options opts) : nodes_(nodes), opts_(std::move(opts)) {}

std::size_t node_watch::restore() {
  if (!opts_.store) return 0;
  auto now = opts_.now();
  std::size_t nodes = 0;
  for (auto& n : opts_.store->load()) {
    if (n.info.id.rfind(waiting_row, 0) == 0) {
      // A failover that found no node before this registry led: its pools wait again.
      n.info.id.erase(0, waiting_row.size());
      logger("registry")
          ->info(
              "remembered pools of lost node {} ({}) waiting for a node: they go to the next node that "
              "registers",
              n.info.id, n.info.name);
      // Its row goes once none of them waits (they may all find a node at once).
      if (!fail_over(n.info, n.pools,
                     "its failover pools were waiting for a node when this registry started or took over"))
        remember_waiting(n.info);
      continue;
    }
    ++nodes;
    auto& w = watched_[n.info.id];
    w.info = n.info;
    w.pools = n.pools;
    w.saved = n.pools;
    w.last_heard = now;
    w.gone_since = now;
    w.patience = opts_.restore_grace;
    logger("registry")
        ->info("remembered node {} ({}) with {} isolate system(s): lost unless it registers within {} ms",
               n.info.id, n.info.name, n.pools.size(), opts_.restore_grace.count());
  }
  return nodes;
}

void node_watch::remember(const std::string& id, watched& w) {
  if (!opts_.store) return;
  auto pools = remembered_pools(w.pools);
  if (pools == w.saved) return;
  try {
    opts_.store->save({w.info, pools});
    w.saved = std::move(pools);
  } catch (const std::exception& e) {
    logger("registry")
        ->error("node {}: {} (it is still watched; failover after a registry restart may miss it)", id,
                e.what());
  }
}

void node_watch::heard(const std::string& id, std::uint64_t epoch) {
  auto it = watched_.find(id);
  if (it != watched_.end() && it->second.epoch == epoch) it->second.last_heard = opts_.now();
}

void node_watch::tick() {
  auto now = opts_.now();
  std::map<std::string, bool> connected;
  for (auto& info : nodes_.list()) {
    connected[info.id] = true;
    auto [it, fresh] = watched_.try_emplace(info.id);
    auto& w = it->second;
    if (fresh || w.gone_since) {
      // New, or back under its id before it was declared lost: heard from just now.
      if (w.gone_since) logger("registry")->info("node {} ({}) is back", info.id, info.name);
      w.last_heard = now;
      w.gone_since.reset();
      w.patience = std::chrono::milliseconds(0);
      w.pinging = w.describing = false;
      w.whole_due = true;
      w.version.reset();
      ++w.epoch;
    }
    w.info = info;
    if (now - w.last_heard > opts_.timeout) {
      lose(info.id,
           "no answer to heartbeats for " +
               std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_heard).count()) +
               " ms");
      continue;
    }
    ask(info.id, w);
  }
  // Nodes whose connection ended: lost unless they register again within the timeout.
  std::vector<std::pair<std::string, bool>> gone;  // id, remembered from before a restart
  for (auto& [id, w] : watched_) {
    if (connected.count(id)) continue;
    if (!w.gone_since) w.gone_since = now;
    auto patience = w.patience.count() > 0 ? w.patience : opts_.timeout;
    if (now - *w.gone_since >= patience) gone.emplace_back(id, w.patience.count() > 0);
  }
  for (auto& [id, restored] : gone)
    lose(id, restored ? "remembered from before this registry started or took over, and not back within " +
                            std::to_string(opts_.restore_grace.count()) + " ms"
                      : "disconnected and not back within " + std::to_string(opts_.timeout.count()) + " ms");
  place_unplaced();
}

void node_watch::ask(const std::string& id, watched& w) {
  auto epoch = w.epoch;
  if (!w.pinging) {
    // Any answer counts, an error too (an older node answers "unknown action"); not a timeout.
    w.pinging = nodes_.request(id, protocol::node::ping{}, [this, id, epoch](node_answer a) {
      auto it = watched_.find(id);
      if (it == watched_.end() || it->second.epoch != epoch) return;
      it->second.pinging = false;
      if (http_status(a) != 502 && http_status(a) != 504) heard(id, epoch);
      if (a && a.value().is_object())
        if (auto v = a.value().find("version"); v != a.value().end() && v->is_number_unsigned())
          it->second.version = v->get<std::uint64_t>();
    });
  }
  describe(id, w);
}

void node_watch::describe(const std::string& id, watched& w) {
  if (w.describing) return;
  auto now = opts_.now();
  auto stale = nodes_.take_stale(id);
  // What the node changed by itself shows in its version; a node without one is described whole
  // every describe_every.
  stale.whole = stale.whole || w.whole_due ||
                (w.version ? w.version != w.described_version : now - w.described_at >= opts_.describe_every);
  if (stale.empty()) return;
  w.whole_due = false;
  w.described_version = w.version;
  if (stale.whole) w.described_at = now;
  protocol::node::describe request;
  if (!stale.whole) request.only = stale.pools;
  auto epoch = w.epoch;
  w.describing = nodes_.request(id, request, [this, id, epoch, stale](node_answer a) {
    auto it = watched_.find(id);
    if (it == watched_.end() || it->second.epoch != epoch) return;
    auto& w = it->second;
    w.describing = false;
    if (!a) {
      // Asked again, with the same scope, at the next heartbeat.
      nodes_.mark_stale(id, stale);
      return;
    }
    heard(id, epoch);
    if (!a.value().is_object()) return;
    if (stale.whole)
      w.pools = std::move(a.value());
    else
      merge_described(w.pools, stale.pools, a.value());
    remember(id, w);
  });
  if (!w.describing) nodes_.mark_stale(id, stale);
}

void node_watch::merge_described(ordered_json& pools, const protocol::node::describe_scope& scope,
                                 const ordered_json& answer) {
  for (auto& [system, pool_names] : scope) {
    const auto& names = pool_names;  // a lambda below reads it (not a structured binding)
    auto given = answer.find(system);
    const bool runs = given != answer.end() && given->is_array();
    if (names.empty()) {
      if (runs)
        pools[system] = *given;
      else
        pools.erase(system);
      continue;
    }
    auto named = [&names](const ordered_json& entry) {
      auto pool_id = entry.is_object() ? entry.value("id", std::string()) : std::string();
      auto slash = pool_id.find('/');
      return slash != std::string::npos && names.count(pool_id.substr(slash + 1)) != 0;
    };
    auto& list = pools[system];
    if (!list.is_array()) list = ordered_json::array();
    ordered_json kept = ordered_json::array();
    for (auto& entry : list)
      if (!named(entry)) kept.push_back(entry);
    if (runs)  // only the named ones: a node that knows no scope answers with every pool
      for (auto& entry : *given)
        if (named(entry)) kept.push_back(entry);
    std::stable_sort(kept.begin(), kept.end(), [](const ordered_json& a, const ordered_json& b) {
      return a.value("id", std::string()) < b.value("id", std::string());
    });
    if (kept.empty() && !runs)
      pools.erase(system);
    else
      list = std::move(kept);
  }
}

void node_watch::lose(const std::string& id, const std::string& why) {
  auto it = watched_.find(id);
  if (it == watched_.end()) return;
  auto lost = std::move(it->second);
  watched_.erase(it);
  logger("registry")->error("node {} ({}) lost: {}", id, lost.info.name, why);
  // A hung node still connected is cut off: its isolate systems may live on, but it gets no requests.
  nodes_.disconnect(id, "lost: " + why);
  fail_over(lost.info, lost.pools, why);
  if (opts_.store) {
    try {
      opts_.store->forget(id);
    } catch (const std::exception& e) {
      logger("registry")->error("node {}: {}", id, e.what());
    }
  }
}

bool node_watch::fail_over(const node_info& lost, const ordered_json& pools, const std::string& why) {
  auto seq = next_failover_++;
  bool waits = false;
  ordered_json record = {{"failover", seq},      {"node", lost.id}, {"name", lost.name},
                         {"lostAt", epoch_ms()}, {"reason", why},   {"pools", ordered_json::array()}};
  auto survivors = nodes_.list();
  for (auto& [system, list] : pools.items()) {
    if (!list.is_array()) continue;
    for (auto& entry : list) {
      if (!entry.is_object() || !entry.value("failover", false)) continue;
      auto index = record["pools"].size();
      if (survivors.empty()) {
        auto moved = moved_entry(entry);
        moved["error"] = no_node_left;
        logger("registry")
            ->error("failover of {} from node {}: no node left to run it; it waits for one",
                    moved["pool"].get<std::string>(), lost.id);
        unplaced_.push_back({seq, index, lost, system, entry});
        waits = true;
        record["pools"].push_back(std::move(moved));
      } else {
        record["pools"].push_back(place({seq, index, lost, system, entry}, survivors));
      }
    }
  }
  if (waits) remember_waiting(lost);
  failovers_.push_back(std::move(record));
  if (failovers_.size() > failovers_kept) failovers_.pop_front();
  return waits;
}

ordered_json node_watch::place(const unplaced& pool, const std::vector<node_info>& survivors) {
  auto seq = pool.seq;
  auto index = pool.index;
  const auto& entry = pool.entry;
  auto moved = moved_entry(entry);
  auto pool_id = moved["pool"].get<std::string>();
  auto workers = moved["workers"].get<std::size_t>();
  // Its workers spread over the survivors, starting with a different one for each pool.
  std::size_t k = std::min(workers, survivors.size());
  for (std::size_t i = 0; i < k; ++i) {
    const auto& target = survivors[(spread_ + i) % survivors.size()];
    std::size_t count = workers / k + (i < workers % k ? 1 : 0);
    auto body = redeploy_body(entry, pool.system, target.id);
    if (!body) {
      moved["error"] = "cannot rebuild its deploy body: " + body.error();
      break;
    }
    body.value()["workersPaths"] = std::vector<std::string>(count, "localhost");
    moved["to"].push_back({{"node", target.id}, {"workers", count}, {"status", "deploying"}});
    auto slot = moved["to"].size() - 1;
    auto target_id = target.id;
    bool sent =
        nodes_.request(target.id, protocol::node::deploy{body.value()},
                       [this, seq, index, slot, pool_id, target_id](node_answer a) {
                         if (a)
                           logger("registry")->info("failover: {} runs on node {} now", pool_id, target_id);
                         else
                           logger("registry")
                               ->error("failover: deploying {} on node {} failed ({}): {}", pool_id,
                                       target_id, http_status(a), a.error());
                         // The record may have been pushed out of the list meanwhile.
                         auto* record = record_of(seq);
                         if (!record || index >= (*record)["pools"].size()) return;
                         auto& to = (*record)["pools"][index]["to"][slot];
                         to["status"] = a ? "deployed" : "failed";
                         if (!a) to["error"] = a.error();
                         to["atMs"] = epoch_ms();
                       });
    if (!sent) moved["to"][slot]["status"] = "failed";
  }
  ++spread_;
  logger("registry")
      ->warn("failover: {} ({} worker(s)) from lost node {} to {} node(s)", pool_id, workers, pool.from.id,
             moved["to"].size());
  return moved;
}

ordered_json* node_watch::record_of(std::uint64_t seq) {
  for (auto& f : failovers_)
    if (f.value("failover", std::uint64_t(0)) == seq) return &f;
  return nullptr;
}

void node_watch::place_unplaced() {
  if (unplaced_.empty()) return;
  auto survivors = nodes_.list();
  if (survivors.empty()) return;
  auto waiting = std::move(unplaced_);
  unplaced_.clear();
  std::map<std::string, node_info> from;
  for (auto& u : waiting) {
    auto moved = place(u, survivors);
    moved["waitedForANode"] = true;
    auto* record = record_of(u.seq);
    // Written before the deploys' answers can come (they come on a later turn of the strand).
    if (record && u.index < (*record)["pools"].size()) (*record)["pools"][u.index] = std::move(moved);
    from.emplace(u.from.id, u.from);
  }
  for (auto& entry : from) remember_waiting(entry.second);
}

void node_watch::remember_waiting(const node_info& lost) {
  if (!opts_.store) return;
  remembered_node row{lost, ordered_json::object()};
  row.info.id = std::string(waiting_row) + lost.id;
  for (auto& u : unplaced_)
    if (u.from.id == lost.id) row.pools[u.system].push_back(u.entry);
  try {
    if (row.pools.empty())
      opts_.store->forget(row.info.id);
    else
      opts_.store->save({row.info, remembered_pools(row.pools)});
  } catch (const std::exception& e) {
    logger("registry")
        ->error(
            "pools of lost node {} waiting for a node: {} (a registry restart or takeover meanwhile "
            "would not place them)",
            lost.id, e.what());
  }
}

ordered_json node_watch::status() const {
  auto now = opts_.now();
  ordered_json nodes = ordered_json::array();
  for (auto& [id, w] : watched_) {
    std::size_t pools = 0;
    for (auto& [system, list] : w.pools.items())
      if (list.is_array()) pools += list.size();
    ordered_json n = {
        {"bootstrapperId", id},
        {"name", w.info.name},
        {"lastHeardMsAgo", std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_heard).count()},
        {"pools", pools}};
    if (w.gone_since)
      n["disconnectedMsAgo"] =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - *w.gone_since).count();
    nodes.push_back(std::move(n));
  }
  return {{"heartbeatMs", opts_.heartbeat.count()},
          {"timeoutMs", opts_.timeout.count()},
          {"nodes", std::move(nodes)},
          {"failovers", failovers_}};
}

}  // namespace dde::registry
