#include "node_table.hpp"

#include <algorithm>
#include <ctime>
#include <utility>

namespace dde::registry {
namespace {

std::string iso8601(std::chrono::system_clock::time_point t) {
  auto seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

ordered_json to_json(const node_info& node) {
  return {{"bootstrapperId", node.id},   {"ip", node.ip},
          {"port", node.port},           {"name", node.name},
          {"activator", node.activator}, {"connectedAt", iso8601(node.connected_at)}};
}

node_table::node_table(options opts) : opts_(std::move(opts)), random_(opts_.seed) {}

std::string node_table::fresh_id() {
  // Nine digits like the thesis's "266393094"; retried while taken (the table is tiny next to 9e8).
  std::uniform_int_distribution<std::uint64_t> digits(100000000, 999999999);
  while (true) {
    auto id = std::to_string(digits(random_));
    if (!nodes_.count(id)) return id;
  }
}

std::string node_table::add(std::uint64_t conn, std::shared_ptr<node_link> link, node_info info,
                            const std::optional<std::string>& wanted) {
  remove(conn);  // a connection holds at most one registration
  std::string id =
      wanted && protocol::valid_bootstrapper_id(*wanted) && !nodes_.count(*wanted) ? *wanted : fresh_id();
  info.id = id;
  nodes_[id] = node{std::move(info), conn, next_seq_++, std::move(link), {}};
  by_conn_[conn] = id;
  return id;
}

std::optional<std::string> node_table::remove(std::uint64_t conn, std::size_t* failed) {
  auto it = by_conn_.find(conn);
  if (it == by_conn_.end()) return std::nullopt;
  std::string id = it->second;
  by_conn_.erase(it);
  nodes_.erase(id);
  std::vector<std::pair<answer_fn, node_answer>> failures;
  for (auto p = pending_.begin(); p != pending_.end();) {
    if (p->second.conn != conn) {
      ++p;
      continue;
    }
    failures.emplace_back(std::move(p->second.done),
                          http_failure<ordered_json>(502, "node " + id + " disconnected"));
    p = pending_.erase(p);
  }
  if (failed) *failed = failures.size();
  fail(std::move(failures));
  return id;
}

void node_table::disconnect(const std::string& id, const std::string& reason) {
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return;
  auto link = it->second.link;
  auto conn = it->second.conn;
  remove(conn);
  if (link) link->close(reason);
}

std::optional<std::string> node_table::id_of(std::uint64_t conn) const {
  auto it = by_conn_.find(conn);
  if (it == by_conn_.end()) return std::nullopt;
  return it->second;
}

std::string node_table::resolve(const std::string& key) const {
  if (nodes_.count(key)) return key;
  std::string found;
  for (auto& [id, n] : nodes_) {
    if (n.info.name != key) continue;
    if (!found.empty()) return {};  // two nodes share the name: it names neither
    found = id;
  }
  return found;
}

const node_info* node_table::find(const std::string& key) const {
  auto it = nodes_.find(resolve(key));
  return it == nodes_.end() ? nullptr : &it->second.info;
}

std::vector<node_info> node_table::list() const {
  std::vector<const node*> sorted;
  for (auto& [id, n] : nodes_) sorted.push_back(&n);
  std::sort(sorted.begin(), sorted.end(), [](const node* a, const node* b) { return a->seq < b->seq; });
  std::vector<node_info> out;
  out.reserve(sorted.size());
  for (auto* n : sorted) out.push_back(n->info);
  return out;
}

bool node_table::request(const std::string& key, protocol::node_request request, answer_fn done) {
  auto it = nodes_.find(resolve(key));
  if (it == nodes_.end()) return false;
  auto request_id = next_request_++;
  pending_[request_id] = {it->first,
                          it->second.conn,
                          std::string(protocol::action_of(request)),
                          touched_by(request),
                          opts_.now() + opts_.request_timeout,
                          std::move(done)};
  it->second.link->send(protocol::encode(protocol::request_frame{request_id, std::move(request)}));
  return true;
}

std::optional<std::string> node_table::on_response(std::uint64_t conn, response_frame response) {
  auto it = pending_.find(response.id);
  if (it == pending_.end() || it->second.conn != conn) {
    // It may have changed anything after the describe its timeout let through.
    if (auto id = id_of(conn)) nodes_.at(*id).stale.whole = true;
    return "no request " + std::to_string(response.id) + " is waiting for an answer (timed out or unknown)";
  }
  auto done = std::move(it->second.done);
  ended(it->second);
  pending_.erase(it);
  if (response.ok)
    done(node_answer(std::move(response.result)));
  else
    done(http_failure<ordered_json>(response.status, std::move(response.error)));
  return std::nullopt;
}

std::size_t node_table::expire() {
  auto now = opts_.now();
  std::vector<std::pair<answer_fn, node_answer>> failures;
  for (auto p = pending_.begin(); p != pending_.end();) {
    if (p->second.deadline > now) {
      ++p;
      continue;
    }
    failures.emplace_back(std::move(p->second.done),
                          http_failure<ordered_json>(
                              504, "node " + p->second.node_id + " did not answer \"" + p->second.action +
                                       "\" within " + std::to_string(opts_.request_timeout.count()) + " ms"));
    ended(p->second);
    p = pending_.erase(p);
  }
  auto n = failures.size();
  fail(std::move(failures));
  return n;
}

void node_table::ended(const pending_request& p) { mark_stale(p.node_id, p.touches); }

stale_pools node_table::take_stale(const std::string& id) {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? stale_pools{} : std::exchange(it->second.stale, stale_pools{});
}

void node_table::mark_stale(const std::string& id, const stale_pools& pools) {
  if (auto it = nodes_.find(id); it != nodes_.end()) it->second.stale.add(pools);
}

void stale_pools::add(const stale_pools& other) {
  whole = whole || other.whole;
  for (auto& [system, names] : other.pools) {
    auto [it, fresh] = pools.try_emplace(system, names);
    if (fresh || it->second.empty()) continue;
    if (names.empty())
      it->second.clear();  // every pool of it
    else
      it->second.insert(names.begin(), names.end());
  }
}

namespace {
/// The system and pool a deploy body names; every pool when it names none.
stale_pools named_in(const ordered_json& body) {
  auto system = body.find("isolateSystemName"), isolate = body.find("isolateName");
  if (system == body.end() || !system->is_string() || isolate == body.end() || !isolate->is_string())
    return {true, {}};
  return {false, {{system->get<std::string>(), {isolate->get<std::string>()}}}};
}

struct touches {
  stale_pools operator()(const protocol::node::deploy& r) const { return named_in(r.body); }
  stale_pools operator()(const protocol::node::redeploy& r) const { return named_in(r.body); }
  stale_pools operator()(const protocol::node::describe&) const { return {}; }
  stale_pools operator()(const protocol::node::ping&) const { return {}; }
  stale_pools operator()(const protocol::node::shutdown& r) const {
    if (!r.isolate) return {false, {{r.system, {}}}};
    return {false, {{r.system, {*r.isolate}}}};
  }
  template <class Pool>
  stale_pools operator()(const Pool& r) const {
    return {false, {{r.system, {r.isolate}}}};
  }
};
}  // namespace

stale_pools touched_by(const protocol::node_request& request) { return std::visit(touches{}, request); }

std::optional<node_table::clock::time_point> node_table::next_deadline() const {
  std::optional<clock::time_point> earliest;
  for (auto& [id, p] : pending_)
    if (!earliest || p.deadline < *earliest) earliest = p.deadline;
  return earliest;
}

void node_table::fail(std::vector<std::pair<answer_fn, node_answer>> failures) {
  // The table is consistent before any callback runs: a callback may send new requests.
  for (auto& [done, answer] : failures) done(std::move(answer));
}

}  // namespace dde::registry
