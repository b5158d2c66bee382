#pragma once
/// \file
/// Collects the acks and rejects of one channel's deliveries and sends them in as few frames as
/// possible: a run of acked deliveries from the oldest unsettled one on becomes one `basic.ack`
/// with `multiple`. Broker delivery tags on a channel are consecutive from 1, so a deque indexed
/// by tag holds the state. No AMQP here: the output goes through `ack_sink`.

#include <cstdint>
#include <deque>
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
  explicit ack_batcher(std::uint16_t channel) : channel_(channel) {}

  /// The broker delivered `tag` on this channel.
  void delivered(std::uint64_t tag);
  /// Settles `tag` (at the next flush).
  void ack(std::uint64_t tag);
  void reject(std::uint64_t tag, bool requeue);
  /// Sends what was settled since the last flush: rejects first, then acks.
  void flush(ack_sink& sink);

  /// Deliveries not yet settled towards the broker.
  std::size_t outstanding() const { return outstanding_; }
  bool has_pending() const { return !acks_.empty() || !rejects_.empty(); }

 private:
  enum class mark : std::uint8_t { open, ack, settled };
  mark* find(std::uint64_t tag);

  std::uint16_t channel_;
  std::uint64_t base_ = 0;  ///< tag of marks_.front()
  std::deque<mark> marks_;
  std::size_t outstanding_ = 0;
  std::vector<std::uint64_t> acks_;
  std::vector<std::pair<std::uint64_t, bool>> rejects_;
};

}  // namespace dde::mqs
