#pragma once
/// \file
/// Collects the acks and rejects of one channel's deliveries and sends them in as few frames as
/// possible: a run of acked deliveries from the oldest unsettled one on becomes one `basic.ack`
/// with `multiple`. Broker delivery tags on a channel are consecutive from 1, so a deque indexed
/// by tag holds the state. No AMQP here: the output goes through `ack_sink`.
///
/// With a `hold`, an ack behind a delivery still open (several consumers share the channel and
/// their hosts finish out of order) waits that long for the multiple ack that closes the gap to
/// cover it, instead of going alone: with 4 consumers on a channel nearly every ack is out of
/// order, and the broker pays for each frame. Only where a late ack costs nothing but a possible
/// redelivery (at-least-once): an at-most-once delivery's ack must reach the broker in the turn it
/// is handed over, so its channel's batcher has no hold.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace dde::mqs {

class ack_sink {
 public:
  virtual ~ack_sink() = default;
  virtual void send_ack(std::uint16_t channel, std::uint64_t tag, bool multiple) = 0;
  virtual void send_reject(std::uint16_t channel, std::uint64_t tag, bool requeue) = 0;
};

class ack_batcher {
 public:
  using clock = std::chrono::steady_clock;
  /// `hold`: how long an ack waits behind an open delivery (none: it goes at the next flush).
  explicit ack_batcher(std::uint16_t channel, clock::duration hold = clock::duration::zero())
      : channel_(channel), hold_(hold) {}

  /// The broker delivered `tag` on this channel to `consumer` (the caller's number for it).
  void delivered(std::uint64_t tag, std::uint32_t consumer = 0);
  /// Settles `tag`, settled by its host at `now`: behind an open delivery it waits until
  /// `now + hold` at most for a multiple ack to cover it.
  void ack(std::uint64_t tag, clock::time_point now = {});
  void reject(std::uint64_t tag, bool requeue);
  /// Sends what was settled, as of `now`: rejects first, then the multiple ack from the oldest
  /// delivery, then each ack behind an open delivery that may not wait any longer.
  void flush(ack_sink& sink, clock::time_point now) { flush(sink, now, false); }
  /// Sends everything settled, held acks included (before a channel is closed, at a stop).
  void flush(ack_sink& sink) { flush(sink, {}, true); }

  /// Deliveries not yet settled by their hosts.
  std::size_t outstanding() const { return outstanding_; }
  /// Deliveries to `consumer` not yet settled by their hosts. When that is its prefetch, the
  /// broker has nothing on its way to it.
  std::uint32_t held_by(std::uint32_t consumer) const;
  bool has_pending() const { return !pending_.empty() || !rejects_.empty(); }
  /// After a flush: when the oldest held ack must go (nothing when none is held).
  std::optional<clock::time_point> due() const;

 private:
  enum class state : std::uint8_t { open, ack, settled };
  struct mark {
    state is;
    std::uint32_t consumer;
  };
  struct pending {
    std::uint64_t tag;
    clock::time_point due;  ///< min(): at the next flush
  };
  mark* find(std::uint64_t tag);
  /// `m` leaves the open state as `to`.
  void close(mark& m, state to);
  void flush(ack_sink& sink, clock::time_point now, bool all);

  std::uint16_t channel_;
  clock::duration hold_;
  std::uint64_t base_ = 0;  ///< tag of marks_.front()
  std::deque<mark> marks_;
  std::size_t outstanding_ = 0;
  /// Open deliveries per consumer (few consumers share a channel: a flat list).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> held_;
  /// Acked and not sent, in the order settled. After a flush only held ones are left, so the
  /// first is due first (settle times only grow, the hold is the same for all).
  std::vector<pending> pending_;
  std::vector<std::pair<std::uint64_t, bool>> rejects_;
};

}  // namespace dde::mqs
