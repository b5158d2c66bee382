#pragma once
/// \file
/// Which host consumes each partition of a partitioned topic, as a Kafka consumer group assigns
/// them, and the deliveries of each partition waiting for it. A partition has at most one owner at
/// a time and its deliveries go to that owner alone, in the order they came, so the messages of one
/// key (one partition) are handled in publish order even when the pool has several replicas.
///
/// - **Even and sticky.** The hosts pulling the topic (the members) each own `count / members`
///   partitions, or one more; a member that joins or leaves moves only as many partitions as that
///   takes, never one between two members that keep theirs.
/// - **Drain before hand-over.** A partition that moves while its owner has deliveries of it in
///   hand stays that owner's, with nothing new sent to it, until they are settled; only then does
///   the next owner get what waits. So a partition is never in two hosts' hands at once.
/// - **A lost owner.** A host that disconnected settles nothing more: what it had in hand is given
///   back (`lose`) and goes first, in its order, to the next owner.
///
/// Pure bookkeeping, no AMQP and no clock: the dispatcher owns one per partitioned topic.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace dde::mqs {

template <class Delivery>
class partition_board {
 public:
  using member = std::uint64_t;  ///< a host connection (client_id); 0 is none
  static constexpr member nobody = 0;

  explicit partition_board(std::uint32_t count) : parts_(std::max<std::uint32_t>(count, 1)) {}

  std::uint32_t count() const { return std::uint32_t(parts_.size()); }

  /// `m` pulls the topic: it takes its share of the partitions.
  void join(member m) {
    if (std::find(members_.begin(), members_.end(), m) != members_.end()) return;
    members_.push_back(m);
    rebalance();
  }
  /// `m` no longer pulls the topic (it cancelled): its partitions move to the others, each once
  /// `m` settled what it has in hand of it.
  void leave(member m) {
    members_.erase(std::remove(members_.begin(), members_.end(), m), members_.end());
    rebalance();
  }
  /// `m` is gone (disconnected): it settles nothing more. `in_hand` is what it had of each
  /// partition (in the order it was sent); it goes back to the front of its partition, flagged by
  /// the caller as it likes, and the partitions move at once.
  void lose(member m, std::map<std::uint32_t, std::vector<Delivery>> in_hand) {
    members_.erase(std::remove(members_.begin(), members_.end(), m), members_.end());
    for (std::uint32_t p = 0; p < parts_.size(); ++p) {
      auto& part = parts_[p];
      if (part.owner != m) {
        if (part.next == m) part.next = nobody;
        continue;
      }
      if (auto it = in_hand.find(p); it != in_hand.end())
        for (auto d = it->second.rbegin(); d != it->second.rend(); ++d)
          part.waiting.push_front(std::move(*d));
      part.in_hand = 0;
      part.owner = part.next;
      part.next = nobody;
    }
    rebalance();
  }

  /// Every delivery is void (the broker takes them back: a channel closed, a connection dropped):
  /// nothing waits, nothing is in hand, and drains are over.
  void clear_deliveries() {
    for (auto& part : parts_) {
      part.waiting.clear();
      part.in_hand = 0;
      if (part.next != nobody) part.owner = part.next;
      part.next = nobody;
    }
  }

  /// A delivery of partition `p` came from the broker: it waits for its owner.
  void arrived(std::uint32_t p, Delivery d) { parts_.at(p).waiting.push_back(std::move(d)); }

  /// The next delivery `m` may be sent, and its partition: its partitions take turns. None when
  /// nothing of its partitions waits (or they are being drained from their previous owner).
  std::optional<std::pair<std::uint32_t, Delivery>> take_for(member m) {
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      auto p = std::uint32_t((turn_ + i) % parts_.size());
      auto& part = parts_[p];
      if (part.owner != m || part.next != nobody || part.waiting.empty()) continue;
      turn_ = p + 1;
      auto d = std::move(part.waiting.front());
      part.waiting.pop_front();
      ++part.in_hand;
      return std::make_pair(p, std::move(d));
    }
    return std::nullopt;
  }
  /// The owner settled a delivery of partition `p` it had in hand (acked, or gave it back).
  /// When that ends a drain, the partition's next owner may be sent what waits: returned.
  member settled(std::uint32_t p) {
    auto& part = parts_.at(p);
    if (part.in_hand > 0) --part.in_hand;
    if (part.in_hand > 0 || part.next == nobody) return nobody;
    part.owner = part.next;
    part.next = nobody;
    return part.owner;
  }

  /// Who is sent partition `p`'s deliveries now (nobody while it drains or has no owner).
  member owner(std::uint32_t p) const {
    auto& part = parts_.at(p);
    return part.next == nobody ? part.owner : nobody;
  }
  /// Who `p` goes to once drained (nobody: it is not draining).
  member draining_to(std::uint32_t p) const { return parts_.at(p).next; }
  /// Deliveries of `p` its owner has in hand.
  std::size_t in_hand(std::uint32_t p) const { return parts_.at(p).in_hand; }
  /// Deliveries of `p` that wait.
  std::size_t waiting(std::uint32_t p) const { return parts_.at(p).waiting.size(); }
  /// Deliveries that wait, over all partitions.
  std::size_t waiting() const {
    std::size_t n = 0;
    for (auto& part : parts_) n += part.waiting.size();
    return n;
  }
  /// The partitions `m` owns or is to own once they drained.
  std::size_t share(member m) const {
    std::size_t n = 0;
    for (auto& part : parts_) n += (part.next != nobody ? part.next : part.owner) == m;
    return n;
  }
  const std::vector<member>& members() const { return members_; }

 private:
  struct partition {
    member owner = nobody;    ///< has its deliveries in hand, or is sent them
    member next = nobody;     ///< once `owner` settled what it has in hand, the new owner
    std::size_t in_hand = 0;  ///< sent to `owner`, not settled
    std::deque<Delivery> waiting;
  };

  /// Whom `part` goes to: the owner it is draining to, else its owner.
  static member target(const partition& part) { return part.next != nobody ? part.next : part.owner; }

  /// Gives each member count/members partitions (the first count % members of them, by how many
  /// they hold now, one more), moving as few as that takes.
  void rebalance() {
    std::map<member, std::size_t> load;
    for (auto m : members_) load[m] = 0;
    std::vector<std::uint32_t> free;
    for (std::uint32_t p = 0; p < parts_.size(); ++p) {
      auto t = target(parts_[p]);
      if (load.count(t))
        ++load[t];
      else
        free.push_back(p);
    }
    if (members_.empty()) {
      for (auto& part : parts_) part.next = nobody;  // no one to drain to; the owner's in-hand settle
      for (auto& part : parts_)
        if (part.in_hand == 0) part.owner = nobody;
      return;
    }
    // Who may hold one more: those holding most now (ties: the longest member), so fewer move.
    std::vector<member> order = members_;
    std::stable_sort(order.begin(), order.end(), [&](member a, member b) { return load[a] > load[b]; });
    const std::size_t base = parts_.size() / members_.size(), extra = parts_.size() % members_.size();
    std::map<member, std::size_t> quota;
    for (std::size_t i = 0; i < order.size(); ++i) quota[order[i]] = base + (i < extra ? 1 : 0);
    // Those over their quota give up their last partitions.
    for (std::uint32_t p = std::uint32_t(parts_.size()); p-- > 0;) {
      auto t = target(parts_[p]);
      if (load.count(t) && load[t] > quota[t]) {
        --load[t];
        free.push_back(p);
      }
    }
    std::sort(free.begin(), free.end());
    for (auto p : free) {
      member to = nobody;
      for (auto m : order)
        if (load[m] < quota[m] && (to == nobody || load[m] < load[to])) to = m;
      ++load[to];
      move(parts_[p], to);
    }
  }

  /// `part` goes to `to`: at once when its owner has nothing of it in hand, else once it settled that.
  static void move(partition& part, member to) {
    if (part.in_hand == 0 || part.owner == to) {
      part.owner = to;
      part.next = nobody;
    } else {
      part.next = to;
    }
  }

  std::vector<partition> parts_;
  std::vector<member> members_;  ///< in the order they joined
  std::size_t turn_ = 0;         ///< where take_for looks first
};

}  // namespace dde::mqs
