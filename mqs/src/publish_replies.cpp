#include "publish_replies.hpp"

#include <span>
#include <unordered_map>

#include "dde/log.hpp"
#include "dde/protocol/mqs_records.hpp"

namespace dde::mqs {

void publish_replies::send(flow_control& flow, topic_counter_cache& counted) {
  if (confirmed_.empty() && refused_.empty()) return;
  struct reply {
    std::shared_ptr<net::ws_connection> conn;
    std::vector<std::uint64_t> seqs;
    std::string extra;
  };
  std::unordered_map<net::ws_connection*, reply> by_conn;
  for (auto& m : confirmed_) {
    flow.remove(1, m.body.size());
    if (m.settled) {
      m.settled(true);
      continue;
    }
    counted(m.topic).published.add();
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
