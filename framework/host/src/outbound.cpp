#include "outbound.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace dde::host {

std::pair<std::uint64_t, const pending_enqueue&> unconfirmed_window::hold(pending_enqueue m) {
  auto seq = next_seq_++;
  auto at = unconfirmed_.emplace_hint(unconfirmed_.end(), seq, std::move(m));
  return {seq, at->second};
}

bool unconfirmed_window::settle(std::uint64_t seq, bool confirmed) {
  auto it = unconfirmed_.find(seq);
  if (it == unconfirmed_.end()) return false;
  auto settled = std::move(it->second.settled);
  unconfirmed_.erase(it);
  if (settled) settled(confirmed);
  return true;
}

bool unconfirmed_window::keep(pending_enqueue m) {
  bool room = backlog_.size() < max_backlog;
  if (!room) backlog_.pop_front();
  backlog_.push_back(std::move(m));
  return room;
}

void unconfirmed_window::for_each_unconfirmed(
    const std::function<void(std::uint64_t, const pending_enqueue&)>& fn) const {
  for (auto& [seq, m] : unconfirmed_) fn(seq, m);
}

std::deque<pending_enqueue> unconfirmed_window::take_backlog() {
  auto taken = std::move(backlog_);
  backlog_.clear();
  return taken;
}

void outgoing_batch::add_pull(const std::string& topic, delivery_mode mode, std::size_t credit,
                              std::uint32_t consumers) {
  auto& p = pulls_[topic];
  p.mode = mode;
  p.credit += credit;
  if (consumers) p.consumers = consumers;
}

std::string outgoing_batch::take(const std::function<void(const std::string&, std::size_t)>& pulled) {
  if (!acks_.empty()) {
    mqs::append(out_, mqs::ack_request{std::move(acks_)});
    acks_.clear();
  }
  for (auto& [topic, p] : pulls_) {
    pulled(topic, p.credit);
    auto credit = std::uint32_t(std::min<std::size_t>(p.credit, std::numeric_limits<std::uint32_t>::max()));
    mqs::pull_request r{topic, p.mode, credit, p.consumers, 0, {}};
    if (auto it = partitions_.find(topic); it != partitions_.end())
      std::tie(r.partitions, r.key) = it->second;
    mqs::append(out_, r);  // split above max_credit
  }
  pulls_.clear();
  auto taken = std::move(out_);
  out_.clear();
  return taken;
}

void outgoing_batch::partition(const std::string& topic, std::uint32_t count, const std::string& key) {
  if (count)
    partitions_[topic] = {count, key};
  else
    partitions_.erase(topic);
}

void outgoing_batch::clear() {
  out_.clear();
  acks_.clear();
  pulls_.clear();
}

}  // namespace dde::host
