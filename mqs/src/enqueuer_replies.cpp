// What goes back once the broker has answered a publish: each host's confirms and rejects, and the
// messages the broker nacked, published again.
#include <algorithm>
#include <span>
#include <unordered_map>

#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"
#include "enqueuer.hpp"
#include "mqs_metrics.hpp"

namespace dde::mqs {

void enqueuer::retry_nacked(std::vector<outgoing_message> nacked) {
  if (nacked.empty()) return;
  logger("mqs.enqueuer")->warn("the broker nacked {} message(s) (first to {}); publishing them again in 200 ms", nacked.size(),
              nacked.front().topic);
  // Published again in the order they were first published (a host's seqs grow with its sends; a
  // multiple nack may list them in any order).
  std::stable_sort(nacked.begin(), nacked.end(), [](const outgoing_message& a, const outgoing_message& b) {
    return a.conn == b.conn ? a.seq < b.seq : a.conn.get() < b.conn.get();
  });
  for (auto& m : nacked) {
    declared_.erase(m.topic);  // the queue may have gone: declare it again before the retry
    retry_.emplace_back(now() + std::chrono::milliseconds(200), std::move(m));
  }
  // A channel that published to a quorum queue while its leader's node was dying can go on being
  // nacked after a new leader is elected (RabbitMQ 3.10); a new connection is not. So when nothing
  // but nacks has come back for a while, the connection is replaced (on a cluster, by one to the
  // next node).
  if (!refusing_since_) refusing_since_ = now();
  if (now() - *refusing_since_ >= refusing_limit)
    lost("the broker has nacked every publish for " + std::to_string(refusing_limit.count()) + " ms");
}

void enqueuer::flush_replies() {
  if (confirmed_.empty() && refused_.empty()) return;
  struct reply {
    std::shared_ptr<net::ws_connection> conn;
    std::vector<std::uint64_t> seqs;
    std::string extra;
  };
  std::unordered_map<net::ws_connection*, reply> by_conn;
  for (auto& m : confirmed_) {
    flow_.remove(1, m.body.size());
    if (m.settled) {
      m.settled(true);
      continue;
    }
    counted_(m.topic).published.add();
    auto& r = by_conn[m.conn.get()];
    if (!r.conn) r.conn = m.conn;
    r.seqs.push_back(m.seq);
  }
  confirmed_.clear();
  for (auto& [m, error] : refused_) {
    if (m.settled) {
      logger("mqs.enqueuer")->warn("could not publish to {}: {}", m.topic, error);
      m.settled(false);
      continue;
    }
    auto& r = by_conn[m.conn.get()];
    if (!r.conn) r.conn = m.conn;
    std::uint64_t seq = m.seq;
    append_reject(r.extra, std::span<const std::uint64_t>(&seq, 1), error);
  }
  refused_.clear();
  for (auto& [ptr, r] : by_conn) {
    if (!r.conn) continue;
    std::string out;
    if (!r.seqs.empty()) append_confirm(out, r.seqs);
    out += r.extra;
    r.conn->send(std::move(out), true);
  }
}

}  // namespace dde::mqs
